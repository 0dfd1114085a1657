//! The Slaney-style mel filterbank librosa builds (`librosa.filters.mel` with its
//! defaults): triangles on the Slaney mel scale, each scaled to unit area.

// Slaney's mel scale: linear below 1 kHz, logarithmic above.
const F_SP: f64 = 200.0 / 3.0;
const MIN_LOG_HZ: f64 = 1000.0;
const MIN_LOG_MEL: f64 = MIN_LOG_HZ / F_SP;

/// `n_mels` filters over `fmin..fmax` Hz for an `n_fft`-point spectrum of audio at
/// `sample_rate`: row-major `[n_mels, n_fft / 2 + 1]`.
pub fn slaney_mel_filters(
    n_mels: usize,
    n_fft: usize,
    sample_rate: f64,
    fmin: f64,
    fmax: f64,
) -> Vec<f32> {
    let freqs = n_fft / 2 + 1;
    let fft_freqs: Vec<f64> = (0..freqs)
        .map(|k| k as f64 * sample_rate / n_fft as f64)
        .collect();
    let (low, high) = (hz_to_mel(fmin), hz_to_mel(fmax));
    let points: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(low + (high - low) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut filters = Vec::with_capacity(n_mels * freqs);
    for i in 0..n_mels {
        let (left, centre, right) = (points[i], points[i + 1], points[i + 2]);
        let norm = 2.0 / (right - left);
        for &f in &fft_freqs {
            let rising = (f - left) / (centre - left);
            let falling = (right - f) / (right - centre);
            filters.push((rising.min(falling).max(0.0) * norm) as f32);
        }
    }
    filters
}

fn log_step() -> f64 {
    6.4f64.ln() / 27.0
}

fn hz_to_mel(hz: f64) -> f64 {
    if hz >= MIN_LOG_HZ {
        MIN_LOG_MEL + (hz / MIN_LOG_HZ).ln() / log_step()
    } else {
        hz / F_SP
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    if mel >= MIN_LOG_MEL {
        MIN_LOG_HZ * (log_step() * (mel - MIN_LOG_MEL)).exp()
    } else {
        F_SP * mel
    }
}
