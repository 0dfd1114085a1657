//! Decoding audio files of any supported container and codec to f32 samples.
//!
//! Formats: WAV (PCM integer and float, A-law, mu-law), FLAC, MP3, Ogg Vorbis, AAC in
//! MP4/M4A (and raw ADTS .aac), and Matroska/WebM holding any of those codecs. Opus is not
//! decoded (symphonia 0.6 has no Opus decoder): it is reported as an unsupported codec.
//!
//! Timing: MP3 (LAME/Xing tag) and Ogg Vorbis are decoded gaplessly, so encoder delay and
//! padding are removed and audio keeps its original timing. AAC in MP4 drops the 1024
//! priming samples encoders put in front (see [`AAC_PRIMING_FRAMES`]).
//!
//! Damaged input: a packet that fails to decode is replaced by silence of the packet's
//! duration (logged as a warning), so later audio stays at its time. A file cut off mid-way
//! yields the audio before the cut, with a warning, where the container can be read
//! without its end (WAV, FLAC, MP3; not Ogg, nor MP4 with its index at the end). Input that
//! yields no audio at all is an error.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use symphonia::core::audio::{AudioSpec, Channels};
use symphonia::core::codecs::audio::well_known::{self as codec_ids, CODEC_ID_AAC};
use symphonia::core::codecs::audio::{AudioCodecId, AudioDecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::units::TimeBase;
use tracing::warn;

use crate::limits::{check_channels, check_sample_rate, max_frames, too_long};
use crate::resample::StreamResampler;
use crate::{AudioError, ASR_SAMPLE_RATE};

/// Decoded audio.
///
/// `samples` are interleaved (frame by frame: `[L0, R0, L1, R1, ...]` for stereo), the
/// layout WAV files use and symphonia copies out directly, so decoding needs no reshuffle
/// and [`Audio::to_mono`] is one pass. Values are nominally in -1.0..=1.0.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    pub channels: u16,
}

impl Audio {
    /// Number of frames (samples per channel).
    pub fn frames(&self) -> usize {
        self.samples.len() / usize::from(self.channels.max(1))
    }

    /// Duration in seconds.
    pub fn duration_seconds(&self) -> f64 {
        self.frames() as f64 / f64::from(self.sample_rate.max(1))
    }

    /// The mean of all channels, one sample per frame.
    pub fn to_mono(&self) -> Vec<f32> {
        let mut mono = Vec::with_capacity(self.frames());
        downmix_into(&self.samples, self.channels, &mut mono);
        mono
    }
}

/// Appends the per-frame mean of interleaved `samples` to `out`.
pub(crate) fn downmix_into(samples: &[f32], channels: u16, out: &mut Vec<f32>) {
    let channels = usize::from(channels.max(1));
    if channels == 1 {
        out.extend_from_slice(samples);
        return;
    }
    let scale = 1.0 / channels as f32;
    out.extend(
        samples
            .chunks_exact(channels)
            .map(|frame| frame.iter().sum::<f32>() * scale),
    );
}

/// Number of priming samples AAC encoders put before the audio. It is the codec's fixed
/// one-frame delay: ffmpeg's encoder uses exactly this (and records it in an MP4 edit list,
/// which symphonia 0.6 does not apply yet), Apple's encoders use 2112. Dropping 1024 keeps
/// audio from ffmpeg-made files exactly in time and the rest within 25 ms.
pub const AAC_PRIMING_FRAMES: u64 = 1024;

/// How much of the start of the input the WAV header check looks at.
const HEAD_BYTES: usize = 64 * 1024;

/// Decodes the audio file at `path`. The extension, if any, is passed to the format prober
/// as a hint; the content decides the format.
pub fn decode_file(path: impl AsRef<Path>) -> Result<Audio, AudioError> {
    let mut samples = Vec::new();
    let (sample_rate, channels) = decode_path_with(path.as_ref(), &mut |chunk, _, _| {
        samples.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(Audio {
        samples,
        sample_rate,
        channels,
    })
}

/// Checks that `path` is audio this module decodes, without decoding all of it: reads
/// its format and decodes until the first samples come (an upload is checked so before
/// a long job is queued for it).
pub fn probe_file(path: impl AsRef<Path>) -> Result<(), AudioError> {
    let mut heard = false;
    let stop = &mut |_: &[f32], _: u32, _: u16| {
        heard = true;
        // Stops the decoder: the rest of the file is the job's to decode.
        Err(AudioError::Cancelled)
    };
    match decode_path_with(path.as_ref(), stop) {
        Ok(_) => Ok(()),
        Err(AudioError::Cancelled) if heard => Ok(()),
        Err(e) => Err(e),
    }
}

/// Decodes audio held in memory (an upload, a download). `hint_extension` is the file
/// extension if known, without the dot ("mp3", "m4a").
pub fn decode_bytes(bytes: &[u8], hint_extension: Option<&str>) -> Result<Audio, AudioError> {
    if bytes.is_empty() {
        return Err(AudioError::EmptyFile);
    }
    let head = &bytes[..bytes.len().min(HEAD_BYTES)];
    let mut samples = Vec::new();
    let (sample_rate, channels) = decode_guarded(
        Box::new(Cursor::new(bytes)),
        head,
        hint_extension,
        None,
        &mut |chunk, _, _| {
            samples.extend_from_slice(chunk);
            Ok(())
        },
    )?;
    Ok(Audio {
        samples,
        sample_rate,
        channels,
    })
}

/// Decodes `path`, downmixes to mono and resamples to 16 kHz: the input the speech models
/// take. Works packet by packet, so only the 16 kHz result is held in memory, never the
/// whole file at its source rate.
pub fn load_for_asr(path: impl AsRef<Path>) -> Result<Vec<f32>, AudioError> {
    let mut resampler: Option<StreamResampler> = None;
    let mut mono = Vec::new();
    let mut out = Vec::new();
    decode_path_with(path.as_ref(), &mut |samples, sample_rate, channels| {
        mono.clear();
        downmix_into(samples, channels, &mut mono);
        let resampler = match &mut resampler {
            Some(r) => r,
            None => resampler.insert(StreamResampler::new(sample_rate, ASR_SAMPLE_RATE)?),
        };
        resampler.push(&mono, &mut out)
    })?;
    if let Some(resampler) = resampler {
        resampler.finish(&mut out)?;
    }
    Ok(out)
}

/// Receives decoded audio: interleaved samples, sample rate, channel count. The rate and
/// channel count are the same on every call of one decode.
pub(crate) type Sink<'a> = dyn FnMut(&[f32], u32, u16) -> Result<(), AudioError> + 'a;

/// Opens `path`, checks it, and decodes it into `sink`. Returns (sample rate, channels).
pub(crate) fn decode_path_with(path: &Path, sink: &mut Sink) -> Result<(u32, u16), AudioError> {
    let unreadable = |source| AudioError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => AudioError::NotFound {
            path: path.to_path_buf(),
        },
        _ => unreadable(e),
    })?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(unreadable(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    if metadata.len() == 0 {
        return Err(AudioError::EmptyFile);
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut file)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
    file.rewind().map_err(unreadable)?;
    let hint = path.extension().and_then(|e| e.to_str());
    decode_guarded(Box::new(file), &head, hint, Some(path), sink)
}

/// [`decode_stream`], with any panic inside symphonia turned into [`AudioError::Corrupt`].
///
/// symphonia still panics on some malformed input (fuzzing found failed asserts and
/// arithmetic overflow in its Matroska and MP4 readers). Catching them here is the only way
/// to keep the promise that no input makes this crate panic; the partial output is
/// discarded with the error. (This needs unwinding: a build with `panic = "abort"` loses it.)
fn decode_guarded(
    source: Box<dyn MediaSource + '_>,
    head: &[u8],
    hint: Option<&str>,
    path: Option<&Path>,
    sink: &mut Sink,
) -> Result<(u32, u16), AudioError> {
    match panic::catch_unwind(AssertUnwindSafe(|| {
        decode_stream(source, head, hint, path, sink)
    })) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(AudioError::Corrupt(format!("decoder failed: {message}")))
        }
    }
}

/// The decode loop: probe the container, pick the first audio track, decode every packet
/// into `sink`, enforcing the size limits. Returns (sample rate, channels).
fn decode_stream(
    source: Box<dyn MediaSource + '_>,
    head: &[u8],
    hint: Option<&str>,
    path: Option<&Path>,
    sink: &mut Sink,
) -> Result<(u32, u16), AudioError> {
    check_wav_header(head)?;

    let mut probe_hint = Hint::new();
    if let Some(ext) = hint {
        probe_hint.with_extension(ext);
    }
    let stream = MediaSourceStream::new(source, Default::default());
    let mut format = symphonia::default::get_probe()
        .probe(
            &probe_hint,
            stream,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| stream_error(e, path))?;

    let (track_id, time_base, declared_frames, params) = format
        .tracks()
        .iter()
        .find_map(|track| {
            let params = track.codec_params.as_ref()?.audio()?.clone();
            // num_frames: the playable frames (without encoder delay and padding), if known.
            Some((track.id, track.time_base, track.num_frames, params))
        })
        .ok_or(AudioError::NoAudioTrack)?;

    // Check what the header declares before decoding anything: a header that claims days
    // of audio is rejected here, in microseconds, not after decoding gigabytes.
    if let Some(rate) = params.sample_rate {
        check_sample_rate(rate)?;
    }
    let declared_channels = params.channels.as_ref().map(channel_count).transpose()?;
    if let (Some(frames), Some(rate)) = (declared_frames, params.sample_rate) {
        let channels = declared_channels.unwrap_or(1);
        if frames > max_frames(rate, channels) {
            return Err(too_long(frames, rate, channels));
        }
    }

    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| match e {
            SymphoniaError::Unsupported(_) => {
                AudioError::UnsupportedCodec(codec_name(params.codec))
            }
            other => stream_error(other, path),
        })?;

    let trim = if params.codec == CODEC_ID_AAC {
        AAC_PRIMING_FRAMES
    } else {
        0
    };
    let mut out = Output::new(sink, trim);
    // symphonia leaves the encoder's padding at the end of AAC streams; the MP4 sample table
    // gives the true length (priming included), so stop there, as players do.
    if params.codec == CODEC_ID_AAC {
        if let Some(declared) = declared_frames {
            out.end = declared.saturating_sub(trim);
        }
    }
    let mut samples: Vec<f32> = Vec::new();
    let mut bad_packets: u64 = 0;
    let mut first_problem = String::new();

    loop {
        let packet = match format.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            // A file that ends mid-packet.
            Err(SymphoniaError::IoError(e)) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            // A chained Ogg stream with new parameters: we decode the first one.
            Err(SymphoniaError::ResetRequired) => {
                warn!("the audio stream changes parameters mid-way; decoded the first part only");
                break;
            }
            // Damaged container data after good audio: keep what we have (a cut-off
            // recording is still worth transcribing).
            Err(e) if out.decoded_frames > 0 => {
                warn!("stopped at damaged data after {} frames: {e}", out.frames);
                break;
            }
            Err(e) => return Err(stream_error(e, path)),
        };
        if packet.track_id != track_id {
            continue;
        }

        let problem = match decoder.decode(&packet) {
            Ok(decoded) => match out.accept_format(decoded.spec())? {
                Err(problem) => Some(problem),
                Ok(_) => {
                    samples.resize(decoded.samples_interleaved(), 0.0);
                    decoded.copy_to_slice_interleaved(&mut samples[..]);
                    out.push(&samples, true)?;
                    None
                }
            },
            // A damaged packet: the packets after it can still be good.
            Err(SymphoniaError::DecodeError(e)) => Some(e.to_string()),
            Err(SymphoniaError::IoError(e)) => Some(e.to_string()),
            Err(SymphoniaError::Unsupported(what)) => {
                return Err(AudioError::UnsupportedCodec(format!(
                    "{} ({what})",
                    codec_name(params.codec)
                )))
            }
            Err(e) => return Err(stream_error(e, path)),
        };
        if let Some(problem) = problem {
            if bad_packets == 0 {
                warn!("skipping an audio packet that does not decode: {problem}");
                first_problem = problem;
            }
            bad_packets += 1;
            // Silence in its place keeps the audio after it at the right time.
            out.push_silence(packet_frames(packet.dur.get(), time_base, out.spec))?;
        }
    }

    if out.decoded_frames == 0 {
        let declared = declared_frames.unwrap_or(0);
        return Err(if bad_packets > 0 {
            AudioError::Corrupt(format!(
                "none of {bad_packets} audio packets decoded; the first error: {first_problem}"
            ))
        } else if declared > 0 {
            AudioError::Corrupt(format!(
                "the header declares {declared} frames, but no audio could be read"
            ))
        } else {
            AudioError::ZeroLength
        });
    }
    if bad_packets > 0 {
        warn!("{bad_packets} damaged audio packets were replaced by silence");
    }
    if let Some(declared) = declared_frames {
        // A couple of packets of slack for codec priming and padding.
        if out.frames + trim + 8192 < declared {
            warn!(
                "the audio ends early: {} of the {declared} frames its header declares \
                 (a truncated file?)",
                out.frames
            );
        }
    }
    // decoded_frames > 0 means the format was fixed.
    out.spec.ok_or(AudioError::ZeroLength)
}

/// Decoded audio on its way to the sink: fixes the stream's format on the first packet,
/// drops leading priming frames, and enforces the size limit.
struct Output<'s, 'a> {
    sink: &'s mut Sink<'a>,
    /// (sample rate, channels) of the first decoded packet.
    spec: Option<(u32, u16)>,
    max_frames: u64,
    /// Frames passed to the sink, silence included.
    frames: u64,
    /// Frames that came from the decoder, not silence standing in for bad packets.
    decoded_frames: u64,
    /// The most frames one decoded packet has given: the most silence a bad packet stands
    /// for, whatever duration its (possibly corrupt) header claims.
    largest_packet: u64,
    /// Leading frames still to drop.
    trim: u64,
    /// Frames after this many are dropped (codec padding).
    end: u64,
    silence: Vec<f32>,
}

impl<'s, 'a> Output<'s, 'a> {
    fn new(sink: &'s mut Sink<'a>, trim: u64) -> Self {
        Output {
            sink,
            spec: None,
            max_frames: u64::MAX,
            frames: 0,
            decoded_frames: 0,
            largest_packet: 0,
            trim,
            end: u64::MAX,
            silence: Vec::new(),
        }
    }

    /// Checks a decoded packet's format. The first packet fixes the stream's format; a
    /// later packet in another format is rejected (`Ok(Err(why))`), as a damaged packet
    /// would be, since its samples cannot join the others. Returns the channel count.
    fn accept_format(&mut self, spec: &AudioSpec) -> Result<Result<u16, String>, AudioError> {
        let rate = spec.rate();
        let count = spec.channels().count();
        match self.spec {
            None => {
                check_sample_rate(rate)?;
                let channels = channel_count(spec.channels())?;
                self.spec = Some((rate, channels));
                self.max_frames = max_frames(rate, channels);
                Ok(Ok(channels))
            }
            Some((r, c)) if r == rate && usize::from(c) == count => Ok(Ok(c)),
            Some((r, c)) => Ok(Err(format!(
                "a packet changes the format from {r} Hz {c} ch to {rate} Hz {count} ch"
            ))),
        }
    }

    /// Passes interleaved samples in the stream's format to the sink.
    fn push(&mut self, samples: &[f32], decoded: bool) -> Result<(), AudioError> {
        let Some((rate, channels)) = self.spec else {
            return Ok(());
        };
        let width = usize::from(channels);
        let frames = (samples.len() / width) as u64;
        if decoded {
            self.largest_packet = self.largest_packet.max(frames);
        }
        let skip = frames.min(self.trim);
        self.trim -= skip;
        let kept = (frames - skip).min(self.end.saturating_sub(self.frames));
        if kept == 0 {
            return Ok(());
        }
        // Checked before the sink stores anything: the limit bounds memory, not just time.
        if self.frames + kept > self.max_frames {
            return Err(too_long(self.frames + kept, rate, channels));
        }
        let start = skip as usize * width;
        (self.sink)(
            &samples[start..start + kept as usize * width],
            rate,
            channels,
        )?;
        self.frames += kept;
        if decoded {
            self.decoded_frames += kept;
        }
        Ok(())
    }

    /// Passes `frames` frames of silence to the sink, in small pieces, standing in for a
    /// packet that did not decode. Capped at the largest packet decoded so far: a damaged
    /// packet's claimed duration is not to be trusted (fuzzing found a 13 KB file claiming
    /// hours), and without a good packet yet there is nothing to go by.
    fn push_silence(&mut self, frames: u64) -> Result<(), AudioError> {
        let Some((_, channels)) = self.spec else {
            return Ok(());
        };
        let frames = frames.min(self.largest_packet);
        let width = usize::from(channels);
        const PIECE: usize = 4096;
        if self.silence.is_empty() {
            self.silence = vec![0.0; PIECE * width];
        }
        let silence = std::mem::take(&mut self.silence);
        let mut left = frames;
        let mut result = Ok(());
        while left > 0 && result.is_ok() {
            let n = left.min(PIECE as u64) as usize;
            result = self.push(&silence[..n * width], false);
            left -= n as u64;
        }
        self.silence = silence;
        result
    }
}

/// The number of channels, if within [`crate::MAX_CHANNELS`].
fn channel_count(channels: &Channels) -> Result<u16, AudioError> {
    let count = u32::try_from(channels.count()).unwrap_or(u32::MAX);
    check_channels(count)?;
    // check_channels bounds it to 1..=32.
    Ok(count as u16)
}

/// A packet's duration in frames at the stream's rate, or 0 if it cannot be known.
fn packet_frames(duration: u64, time_base: Option<TimeBase>, spec: Option<(u32, u16)>) -> u64 {
    let (Some(tb), Some((rate, _))) = (time_base, spec) else {
        return 0;
    };
    let frames = u128::from(duration) * u128::from(tb.numer.get()) * u128::from(rate)
        / u128::from(tb.denom.get());
    u64::try_from(frames).unwrap_or(u64::MAX)
}

/// Maps a symphonia error from the container or decoder to ours.
fn stream_error(error: SymphoniaError, path: Option<&Path>) -> AudioError {
    match error {
        SymphoniaError::IoError(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            AudioError::Corrupt(format!("the data ends too early: {e}"))
        }
        // Reading the file itself failed (not malformed content).
        SymphoniaError::IoError(e) if path.is_some() => AudioError::Unreadable {
            path: path.map(Path::to_path_buf).unwrap_or_default(),
            source: e,
        },
        SymphoniaError::Unsupported(what) => AudioError::UnsupportedFormat(what.to_string()),
        other => AudioError::Corrupt(other.to_string()),
    }
}

/// A codec's short name, for error messages.
fn codec_name(codec: AudioCodecId) -> String {
    if let Some(registered) = symphonia::default::get_codecs().get_audio_decoder(codec) {
        return registered.codec.info.short_name.to_string();
    }
    let name = match codec {
        codec_ids::CODEC_ID_OPUS => "opus",
        codec_ids::CODEC_ID_ALAC => "alac",
        codec_ids::CODEC_ID_MP1 => "mp1",
        codec_ids::CODEC_ID_MP2 => "mp2",
        codec_ids::CODEC_ID_SPEEX => "speex",
        codec_ids::CODEC_ID_AC3 => "ac3",
        codec_ids::CODEC_ID_EAC3 => "eac3",
        codec_ids::CODEC_ID_AC4 => "ac4",
        codec_ids::CODEC_ID_DCA => "dts",
        codec_ids::CODEC_ID_WMA => "wma",
        codec_ids::CODEC_ID_WAVPACK => "wavpack",
        codec_ids::CODEC_ID_MONKEYS_AUDIO => "ape",
        codec_ids::CODEC_ID_TTA => "tta",
        codec_ids::CODEC_ID_MUSEPACK => "musepack",
        codec_ids::CODEC_ID_ADPCM_MS | codec_ids::CODEC_ID_ADPCM_IMA_WAV => "adpcm",
        _ => return format!("codec id {codec}"),
    };
    name.to_string()
}

/// Checks the channel count and sample rate in a WAV header's fmt chunk, if `head` (the
/// start of the input) holds one. symphonia rejects both only as generic bad data; this
/// gives each a precise error.
fn check_wav_header(head: &[u8]) -> Result<(), AudioError> {
    if head.get(0..4) != Some(b"RIFF") || head.get(8..12) != Some(b"WAVE") {
        return Ok(());
    }
    let mut pos: usize = 12;
    while let Some(chunk) = head.get(pos..pos.saturating_add(8)) {
        let id = &chunk[0..4];
        let size = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]) as usize;
        let body = pos + 8;
        if id == b"fmt " {
            // Layout: format tag u16, channels u16, sample rate u32, ...
            if let Some(fmt) = head.get(body..body + 8) {
                let channels = u16::from_le_bytes([fmt[2], fmt[3]]);
                let rate = u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]);
                check_channels(u32::from(channels))?;
                check_sample_rate(rate)?;
            }
            return Ok(());
        }
        if id == b"data" {
            return Ok(());
        }
        // Chunks are padded to an even length.
        pos = body.saturating_add(size).saturating_add(size & 1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mono(rate: u32) -> AudioSpec {
        AudioSpec::new(rate, Channels::Discrete(1))
    }

    fn fmt_chunk(channels: u16, rate: u32) -> Vec<u8> {
        let mut v = b"RIFF\x00\x00\x00\x00WAVE".to_vec();
        // A LIST chunk before fmt, odd-sized, to exercise the padding rule.
        v.extend(b"LIST\x03\x00\x00\x00abc\x00");
        v.extend(b"fmt \x10\x00\x00\x00\x01\x00");
        v.extend(channels.to_le_bytes());
        v.extend(rate.to_le_bytes());
        v.extend([0; 8]);
        v
    }

    #[test]
    fn wav_header_check() {
        assert!(check_wav_header(&fmt_chunk(2, 44_100)).is_ok());
        assert!(matches!(
            check_wav_header(&fmt_chunk(0, 44_100)),
            Err(AudioError::InvalidChannels(0))
        ));
        assert!(matches!(
            check_wav_header(&fmt_chunk(1, 0)),
            Err(AudioError::InvalidSampleRate(0))
        ));
        // Not a WAV, or cut short: left to symphonia.
        assert!(check_wav_header(b"fLaC").is_ok());
        assert!(check_wav_header(&fmt_chunk(0, 0)[..30]).is_ok());
        // A chunk size that would overflow the position.
        let mut huge = b"RIFF\x00\x00\x00\x00WAVEjunk\xff\xff\xff\xff".to_vec();
        huge.extend([0; 32]);
        assert!(check_wav_header(&huge).is_ok());
    }

    /// The limit is enforced on decoded frames, not only on what the header says.
    #[test]
    fn output_stops_at_the_frame_limit() {
        let mut received = 0usize;
        let mut sink = |s: &[f32], _: u32, _: u16| {
            received += s.len();
            Ok(())
        };
        let mut out = Output::new(&mut sink, 0);
        assert_eq!(out.accept_format(&mono(16_000)).unwrap(), Ok(1));
        out.max_frames = 10_000;
        out.push(&[0.5; 6_000], true).unwrap();
        let err = out.push(&[0.5; 6_000], true).unwrap_err();
        assert!(matches!(err, AudioError::TooLong { .. }), "{err:?}");
        assert!(matches!(
            out.push_silence(1_000_000),
            Err(AudioError::TooLong { .. })
        ));
        assert_eq!(received, 6_000);
    }

    #[test]
    fn output_trims_priming_and_padding() {
        let mut received = Vec::new();
        let mut sink = |s: &[f32], _: u32, _: u16| {
            received.extend_from_slice(s);
            Ok(())
        };
        let mut out = Output::new(&mut sink, 3);
        out.end = 4;
        out.accept_format(&mono(16_000)).unwrap().unwrap();
        out.push(&[1.0, 2.0], true).unwrap();
        out.push(&[3.0, 4.0, 5.0, 6.0, 7.0, 8.0], true).unwrap();
        assert_eq!(received, vec![4.0, 5.0, 6.0, 7.0]);
    }

    #[test]
    fn a_packet_in_another_format_is_rejected() {
        let mut sink = |_: &[f32], _: u32, _: u16| Ok(());
        let mut out = Output::new(&mut sink, 0);
        let stereo = AudioSpec::new(16_000, Channels::Discrete(2));
        assert_eq!(out.accept_format(&mono(16_000)).unwrap(), Ok(1));
        assert!(out.accept_format(&stereo).unwrap().is_err());
        assert!(out.accept_format(&mono(8_000)).unwrap().is_err());
        assert_eq!(out.accept_format(&mono(16_000)).unwrap(), Ok(1));
        let mut sink = |_: &[f32], _: u32, _: u16| Ok(());
        assert!(matches!(
            Output::new(&mut sink, 0).accept_format(&mono(0)),
            Err(AudioError::InvalidSampleRate(0))
        ));
        let mut sink = |_: &[f32], _: u32, _: u16| Ok(());
        let many = AudioSpec::new(16_000, Channels::Discrete(300));
        assert!(matches!(
            Output::new(&mut sink, 0).accept_format(&many),
            Err(AudioError::InvalidChannels(300))
        ));
    }

    #[test]
    fn packet_durations_convert_to_frames() {
        let tb = TimeBase::try_new(1, 44_100);
        assert_eq!(packet_frames(1152, tb, Some((44_100, 2))), 1152);
        // An MP4 time scale of 1000 per second.
        let ms = TimeBase::try_new(1, 1000);
        assert_eq!(packet_frames(20, ms, Some((48_000, 1))), 960);
        // A hostile duration saturates instead of overflowing.
        let one = TimeBase::try_new(1, 1);
        assert_eq!(packet_frames(u64::MAX, one, Some((768_000, 1))), u64::MAX);
        assert_eq!(packet_frames(100, None, Some((8_000, 1))), 0);
    }

    #[test]
    fn codec_names() {
        assert_eq!(codec_name(codec_ids::CODEC_ID_OPUS), "opus");
        assert_eq!(codec_name(codec_ids::CODEC_ID_MP3), "mp3");
        assert_eq!(
            codec_name(symphonia::core::codecs::audio::CODEC_ID_NULL_AUDIO),
            "codec id 0x0"
        );
    }
}
