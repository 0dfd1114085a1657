//! The inverse of a monotonic rational-quadratic spline with linear tails (Durkan et
//! al., "Neural Spline Flows"), the transform of the duration predictor's `ConvFlow`.
//! It runs element by element on plain floats: there are only a few per phoneme. The
//! arithmetic follows VITS's `transforms.py` step by step in f32, so results match
//! the exported graph to rounding.

// f64 like the Python constants; each is rounded to f32 where VITS's code meets a tensor.
const MIN_BIN_WIDTH: f64 = 1e-3;
const MIN_BIN_HEIGHT: f64 = 1e-3;
const MIN_DERIVATIVE: f64 = 1e-3;

/// Inverts the spline on `[-bound, bound]` at `y`; outside that interval the transform
/// is the identity. `widths` and `heights` hold one unnormalized value per bin,
/// `derivatives` one per inner knot (bins - 1).
pub fn inverse(y: f32, widths: &[f32], heights: &[f32], derivatives: &[f32], bound: f32) -> f32 {
    if !(-bound..=bound).contains(&y) {
        return y;
    }
    let (cum_w, w) = knots(widths, MIN_BIN_WIDTH, bound);
    let (cum_h, h) = knots(heights, MIN_BIN_HEIGHT, bound);
    let d = knot_derivatives(derivatives);

    // The bin whose output range holds y (the last edge nudged up by 1e-6, as VITS).
    let bins = w.len();
    let above = |j: usize| {
        let edge = if j == bins { cum_h[j] + 1e-6 } else { cum_h[j] };
        y >= edge
    };
    let k = (0..=bins)
        .filter(|&j| above(j))
        .count()
        .saturating_sub(1)
        .min(bins - 1);

    let delta = h[k] / w[k];
    let (d0, d1) = (d[k], d[k + 1]);
    let dy = y - cum_h[k];
    let curve = d0 + d1 - 2.0 * delta;
    let a = dy * curve + h[k] * (delta - d0);
    let b = h[k] * d0 - dy * curve;
    let c = -delta * dy;
    let discriminant = (b * b - 4.0 * a * c).max(0.0);
    let root = (2.0 * c) / (-b - discriminant.sqrt());
    root * w[k] + cum_w[k]
}

/// Slopes at every knot. The outer two are pinned so the spline meets the linear
/// tails with slope 1.
fn knot_derivatives(inner: &[f32]) -> Vec<f32> {
    let edge = ((1.0 - MIN_DERIVATIVE).exp() - 1.0).ln() as f32;
    std::iter::once(edge)
        .chain(inner.iter().copied())
        .chain(std::iter::once(edge))
        .map(|u| MIN_DERIVATIVE as f32 + softplus(u))
        .collect()
}

/// Softmax-normalized bin sizes with a floor, laid out on [-bound, bound]: the knot
/// positions (bins + 1, ends exact) and the bin sizes between them.
fn knots(unnormalized: &[f32], min_size: f64, bound: f32) -> (Vec<f32>, Vec<f32>) {
    let n = unnormalized.len();
    let scale = (1.0 - min_size * n as f64) as f32;
    let min_size = min_size as f32;
    let max = unnormalized
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = unnormalized.iter().map(|u| (u - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    let mut cum = Vec::with_capacity(n + 1);
    cum.push(0.0f32);
    let mut acc = 0.0f32;
    for e in &exp {
        acc += min_size + scale * (e / sum);
        cum.push(acc);
    }
    let mut cum: Vec<f32> = cum.iter().map(|c| 2.0 * bound * c - bound).collect();
    cum[0] = -bound;
    cum[n] = bound;
    let sizes = cum.windows(2).map(|p| p[1] - p[0]).collect();
    (cum, sizes)
}

/// `ln(1 + e^x)`, linear above 20 as in torch.
fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forward spline, written independently from the paper's formula.
    fn forward(x: f32, widths: &[f32], heights: &[f32], derivatives: &[f32], bound: f32) -> f32 {
        let (cum_w, w) = knots(widths, MIN_BIN_WIDTH, bound);
        let (cum_h, h) = knots(heights, MIN_BIN_HEIGHT, bound);
        let d = knot_derivatives(derivatives);
        let k = (0..w.len()).rev().find(|&j| x >= cum_w[j]).unwrap();
        let theta = (x - cum_w[k]) / w[k];
        let s = h[k] / w[k];
        let num = h[k] * (s * theta * theta + d[k] * theta * (1.0 - theta));
        let den = s + (d[k] + d[k + 1] - 2.0 * s) * theta * (1.0 - theta);
        cum_h[k] + num / den
    }

    #[test]
    fn inverts_the_forward_spline() {
        let widths = [0.3, -1.2, 0.5, 2.0, 0.0, -0.4, 1.1, 0.2, -2.0, 0.7];
        let heights = [1.0, 0.1, -0.3, 0.4, 0.9, -1.5, 0.2, 0.6, 0.0, -0.2];
        let derivatives = [0.5, -0.5, 1.5, 0.0, 2.0, -1.0, 0.3, 0.8, -0.1];
        for i in -60..=60 {
            let x = i as f32 / 10.0;
            let y = if (-5.0..=5.0).contains(&x) {
                forward(x, &widths, &heights, &derivatives, 5.0)
            } else {
                x
            };
            let back = inverse(y, &widths, &heights, &derivatives, 5.0);
            assert!((back - x).abs() < 1e-4, "x {x}: y {y} inverts to {back}");
        }
    }
}
