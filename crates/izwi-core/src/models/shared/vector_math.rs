//! `exp`, `erf`, `tanh`, `sigmoid` and `sin²` over f32 slices, written so the compiler
//! vectorises them: no libm calls in the loop, only multiplies, adds and bit tricks.
//! candle's CPU softmax and exact GELU call libm once per element, and those calls were
//! a tenth of Whisper's encoder time (docs/speed.md). On x86-64 the loops are compiled
//! a second time for AVX2 + FMA and chosen at run time; elsewhere the portable build is
//! used.

/// `out[i] = exp(x[i] - shift)`, returning the sum of the outputs (softmax's
/// denominator). `-inf` inputs give 0.
pub fn exp_shifted_sum(x: &[f32], shift: f32, out: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { exp_shifted_sum_avx2(x, shift, out) };
    }
    exp_shifted_sum_portable(x, shift, out)
}

/// `x[i] = exp(x[i] - shift)` in place, returning the sum.
pub fn exp_shifted_sum_in_place(x: &mut [f32], shift: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { exp_shifted_sum_in_place_avx2(x, shift) };
    }
    exp_shifted_sum_in_place_portable(x, shift)
}

/// `out[i] = 0.5 · x · (1 + erf(x / √2))`, GELU as Whisper and BERT define it.
pub fn gelu_erf(x: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: as above.
        return unsafe { gelu_erf_avx2(x, out) };
    }
    gelu_erf_portable(x, out)
}

/// `out[i] = tanh(x[i])`.
pub fn tanh_slice(x: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: as above.
        return unsafe { tanh_slice_avx2(x, out) };
    }
    tanh_slice_portable(x, out)
}

/// `out[i] = tanh(a[i]) · sigmoid(b[i])`, WaveNet's gate.
pub fn gated_tanh(a: &[f32], b: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: as above.
        return unsafe { gated_tanh_avx2(a, b, out) };
    }
    gated_tanh_portable(a, b, out)
}

/// `out[i] = x[i] + scale · sin²(freq · x[i])`: SnakeBeta over one channel's row.
pub fn snake(x: &[f32], freq: f32, scale: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: as above.
        return unsafe { snake_avx2(x, freq, scale, out) };
    }
    snake_portable(x, freq, scale, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn snake_avx2(x: &[f32], freq: f32, scale: f32, out: &mut [f32]) {
    snake_portable(x, freq, scale, out)
}

#[inline(always)]
fn snake_portable(x: &[f32], freq: f32, scale: f32, out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = v + scale * sin_squared(freq * v);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tanh_slice_avx2(x: &[f32], out: &mut [f32]) {
    tanh_slice_portable(x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gated_tanh_avx2(a: &[f32], b: &[f32], out: &mut [f32]) {
    gated_tanh_portable(a, b, out)
}

#[inline(always)]
fn tanh_slice_portable(x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = tanh(v);
    }
}

#[inline(always)]
fn gated_tanh_portable(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o = tanh(a) * sigmoid(b);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_shifted_sum_avx2(x: &[f32], shift: f32, out: &mut [f32]) -> f32 {
    exp_shifted_sum_portable(x, shift, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_shifted_sum_in_place_avx2(x: &mut [f32], shift: f32) -> f32 {
    exp_shifted_sum_in_place_portable(x, shift)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_erf_avx2(x: &[f32], out: &mut [f32]) {
    gelu_erf_portable(x, out)
}

#[inline(always)]
fn exp_shifted_sum_portable(x: &[f32], shift: f32, out: &mut [f32]) -> f32 {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp(v - shift);
    }
    lane_sum(&out[..x.len()])
}

#[inline(always)]
fn exp_shifted_sum_in_place_portable(x: &mut [f32], shift: f32) -> f32 {
    for v in x.iter_mut() {
        *v = exp(*v - shift);
    }
    lane_sum(x)
}

/// A sum in eight partial sums, so the additions vectorise (f32 addition is not
/// associative, so the compiler will not reorder a single running sum).
#[inline(always)]
fn lane_sum(x: &[f32]) -> f32 {
    let mut sums = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let rest: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (s, &v) in sums.iter_mut().zip(chunk) {
            *s += v;
        }
    }
    sums.iter().sum::<f32>() + rest
}

#[inline(always)]
fn gelu_erf_portable(x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `e^x` to about 1 ulp for x in f32's range; below -87.3 the result is 0 and above
/// 88.3 it saturates at e^88.3. Range reduction `x = n·ln2 + r`, `|r| ≤ ln2/2`, then a degree-6
/// polynomial for `e^r` (Cephes' coefficients) and `2^n` built in the exponent bits.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two so n·ln2 is exact in the first part.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 · 2^23: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let clamped = x.clamp(-87.3, 88.3);
    // Rounded this way, `shifted`'s low mantissa bits hold n as an integer: 2^n is
    // built from them with integer adds and shifts, which vectorise (a float-to-int
    // cast does not: Rust's saturating cast is done one lane at a time).
    let shifted = clamped * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_2e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    let two_n = f32::from_bits(
        shifted
            .to_bits()
            .wrapping_sub(ROUND.to_bits())
            .wrapping_add(127)
            << 23,
    );
    if x < -87.3 {
        0.0
    } else {
        e_r * two_n
    }
}

/// `tanh(x)` within 2.5e-7 of libm's: `(e^2x − 1) / (e^2x + 1)`, the argument
/// clamped where tanh is ±1 in f32 (so e^2x cannot overflow). Near 0 the subtraction
/// loses the relative precision but not the absolute.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let e = exp(2.0 * x.clamp(-9.0, 9.0));
    (e - 1.0) / (e + 1.0)
}

/// `1 / (1 + e^−x)`, within 1.5e-7; below −88.3, where e^−x saturates, about 4e-39.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `sin²(x)` within 2e-7 of the f64 value for |x| ≤ 10⁴ (the test walks that range).
/// `x = j·π/2 + r`, `|r| ≤ π/4`, with π/2 in three parts: the first two have few enough
/// bits that `j` times each is exact for |x| up to about 1.2·10⁴, so `r` keeps its
/// precision there; the argument is clamped to ±10⁵ so `j` stays exact in the rounding
/// trick. Then sin²(x) is sin²(r) for even j and cos²(r) = 1 − sin²(r) for odd j, sin(r)
/// from Cephes' degree-7 polynomial. The sign of sin never matters, so neither does
/// j's beyond its parity.
#[inline(always)]
pub fn sin_squared(x: f32) -> f32 {
    const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;
    const PI_2_A: f32 = 1.570_312_5;
    const PI_2_B: f32 = 4.837_513e-4;
    const PI_2_C: f32 = 7.549_79e-8;
    // 1.5 · 2^23, as in `exp`: the sum's low mantissa bits hold j.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-1e5, 1e5);
    let shifted = x * TWO_OVER_PI + ROUND;
    let j = shifted - ROUND;
    let odd = shifted.to_bits().wrapping_sub(ROUND.to_bits()) & 1 == 1;
    let r = ((x - j * PI_2_A) - j * PI_2_B) - j * PI_2_C;
    let r2 = r * r;
    let sin_r = r + r * r2 * (-1.666_665_5e-1 + r2 * (8.332_161e-3 + r2 * -1.951_529_6e-4));
    let s2 = sin_r * sin_r;
    if odd {
        1.0 - s2
    } else {
        s2
    }
}

/// `erf(x)` within 1.5e-7 (Abramowitz & Stegun 7.1.26), odd by construction.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];
    let a = x.abs();
    let t = 1.0 / (1.0 + P * a);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulps_of_std() {
        let mut worst = 0f32;
        let mut x = -87.0f32;
        while x < 88.0 {
            let relative = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(relative);
            x += 0.0137;
        }
        assert!(worst < 2.5e-7, "relative error {worst}");
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
        assert!(exp(100.0).is_finite());
    }

    #[test]
    fn tanh_and_sigmoid_are_within_their_bounds_of_std() {
        let (mut worst_tanh, mut worst_sigmoid) = (0f32, 0f32);
        let mut x = -120.0f32;
        while x < 120.0 {
            worst_tanh = worst_tanh.max((tanh(x) - x.tanh()).abs());
            let want = 1.0 / (1.0 + (-f64::from(x)).exp());
            worst_sigmoid = worst_sigmoid.max((f64::from(sigmoid(x)) - want).abs() as f32);
            x += if x.abs() < 10.0 { 0.000_37 } else { 0.37 };
        }
        assert!(worst_tanh < 2.5e-7, "tanh: {worst_tanh}");
        assert!(worst_sigmoid < 1.5e-7, "sigmoid: {worst_sigmoid}");
        assert_eq!((tanh(0.0), tanh(1e4), tanh(-1e4)), (0.0, 1.0, -1.0));
        assert!(sigmoid(-1e4) < 1e-38 && sigmoid(1e4) == 1.0);
    }

    #[test]
    fn sin_squared_is_within_its_bound_of_f64() {
        let mut worst = 0f64;
        let mut x = -1e4f32;
        while x < 1e4 {
            let want = f64::from(x).sin().powi(2);
            worst = worst.max((f64::from(sin_squared(x)) - want).abs());
            // Densely near 0 and the multiples of π/2, sparsely far out.
            x += if x.abs() < 20.0 { 0.000_31 } else { 0.731 };
        }
        assert!(worst < 2e-7, "sin²: {worst}");
        assert_eq!(sin_squared(0.0), 0.0);
        assert!(sin_squared(f32::MAX).is_finite() && sin_squared(f32::MIN).is_finite());
    }

    #[test]
    fn erf_is_within_its_bound() {
        // Reference values of erf to 8 digits.
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.1, 0.112_462_92),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
            assert!((erf(-x) + want).abs() < 3e-7);
        }
    }

    #[test]
    fn slices_of_odd_lengths_match_the_scalar_functions() {
        for len in [0usize, 1, 7, 8, 9, 31, 1001] {
            let x: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() * 9.0).collect();
            let mut out = vec![0f32; len];
            let sum = exp_shifted_sum(&x, 1.5, &mut out);
            let want: Vec<f32> = x.iter().map(|&v| exp(v - 1.5)).collect();
            assert_eq!(out, want);
            let want_sum: f32 = want.iter().sum();
            assert!((sum - want_sum).abs() <= 1e-5 * want_sum.max(1.0));
            let mut in_place = x.clone();
            let sum_in_place = exp_shifted_sum_in_place(&mut in_place, 1.5);
            assert_eq!((in_place, sum_in_place), (out.clone(), sum));
            tanh_slice(&x, &mut out);
            assert_eq!(out, x.iter().map(|&v| tanh(v)).collect::<Vec<_>>());
            let b: Vec<f32> = x.iter().rev().copied().collect();
            gated_tanh(&x, &b, &mut out);
            let want: Vec<f32> = x
                .iter()
                .zip(&b)
                .map(|(&a, &b)| tanh(a) * sigmoid(b))
                .collect();
            assert_eq!(out, want);
            snake(&x, 1.3, 0.7, &mut out);
            let want: Vec<f32> = x.iter().map(|&v| v + 0.7 * sin_squared(1.3 * v)).collect();
            assert_eq!(out, want);
            gelu_erf(&x, &mut out);
            for (o, &v) in out.iter().zip(&x) {
                assert!(
                    (o - 0.5 * v * (1.0 + erf(v * std::f32::consts::FRAC_1_SQRT_2))).abs() < 1e-6
                );
            }
        }
    }
}
