//! Bounds on what we accept, so a hostile or broken header cannot make us allocate
//! without limit.

use crate::AudioError;

/// The longest audio we decode: 4 hours, measured at the source rate. Long meetings and
/// lectures fit; a header claiming days of audio is rejected before decoding.
pub const MAX_DURATION_SECONDS: u64 = 4 * 60 * 60;

/// The most samples (frames × channels) we hold from one decode: 4 hours of 48 kHz stereo,
/// about 5.5 GB as f32. Without this, a 4-hour file at 768 kHz with 32 channels would pass
/// the duration limit and ask for terabytes.
pub const MAX_DECODED_SAMPLES: u64 = MAX_DURATION_SECONDS * 48_000 * 2;

/// Lowest sample rate accepted. Below 1 kHz nothing intelligible survives; such a value in a
/// header is a sign of corruption.
pub const MIN_SAMPLE_RATE: u32 = 1_000;

/// Highest sample rate accepted: the highest rate real hardware records at.
pub const MAX_SAMPLE_RATE: u32 = 768_000;

/// Most channels accepted (symphonia's own limit, and more than any real recording).
pub const MAX_CHANNELS: u32 = 32;

/// The most frames one decode of audio at `sample_rate` with `channels` may yield:
/// the smaller of [`MAX_DURATION_SECONDS`] and [`MAX_DECODED_SAMPLES`] / channels.
pub fn max_frames(sample_rate: u32, channels: u16) -> u64 {
    let by_duration = MAX_DURATION_SECONDS * u64::from(sample_rate);
    let by_memory = MAX_DECODED_SAMPLES / u64::from(channels.max(1));
    by_duration.min(by_memory)
}

/// The [`AudioError::TooLong`] for `frames` frames at this rate and channel count.
pub(crate) fn too_long(frames: u64, sample_rate: u32, channels: u16) -> AudioError {
    let rate = f64::from(sample_rate.max(1));
    AudioError::TooLong {
        seconds: frames as f64 / rate,
        limit_seconds: max_frames(sample_rate, channels) as f64 / rate,
    }
}

pub(crate) fn check_sample_rate(rate: u32) -> Result<(), AudioError> {
    if (MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&rate) {
        Ok(())
    } else {
        Err(AudioError::InvalidSampleRate(rate))
    }
}

pub(crate) fn check_channels(channels: u32) -> Result<(), AudioError> {
    if (1..=MAX_CHANNELS).contains(&channels) {
        Ok(())
    } else {
        Err(AudioError::InvalidChannels(channels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_frames_is_the_tighter_limit() {
        // Mono 16 kHz: the duration limit binds.
        assert_eq!(max_frames(16_000, 1), 4 * 3600 * 16_000);
        // 48 kHz stereo: both limits agree.
        assert_eq!(max_frames(48_000, 2), 4 * 3600 * 48_000);
        // 96 kHz stereo: the memory limit binds, at 2 hours.
        assert_eq!(max_frames(96_000, 2), 2 * 3600 * 96_000);
    }

    #[test]
    fn rate_and_channel_bounds() {
        assert!(check_sample_rate(0).is_err());
        assert!(check_sample_rate(999).is_err());
        assert!(check_sample_rate(8_000).is_ok());
        assert!(check_sample_rate(768_000).is_ok());
        assert!(check_sample_rate(768_001).is_err());
        assert!(check_channels(0).is_err());
        assert!(check_channels(1).is_ok());
        assert!(check_channels(32).is_ok());
        assert!(check_channels(33).is_err());
    }
}
