//! Microphones and speakers, through cpal: list the devices, capture from one as 16 kHz
//! mono (what the speech models take) and play mono audio of any rate on another.
//!
//! cpal's callbacks run on the audio thread and must not block: capture sends the
//! device's samples, mixed to mono, down a channel and [`Microphone::recv`] resamples
//! them on the caller's thread; playback resamples in [`Playback::play`] and the
//! callback only copies from a queue. A device that fails or disappears mid-stream is
//! an error from the next call, never a hang.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, Sample, SampleFormat, SizedSample, StreamConfig};

use crate::resample::StreamResampler;
use crate::{AudioError, ASR_SAMPLE_RATE};

/// An audio device as the user picks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Stable across runs where the platform allows: what settings remember.
    pub id: String,
    pub name: String,
    pub is_default: bool,
}

fn device_error(what: impl std::fmt::Display) -> AudioError {
    AudioError::Device(what.to_string())
}

/// The microphones (and other capture devices) there are.
pub fn input_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    let host = cpal::default_host();
    let default = host.default_input_device().and_then(|d| d.id().ok());
    let devices = host.input_devices().map_err(device_error)?;
    Ok(devices
        .filter_map(|d| describe(&d, default.as_ref()))
        .collect())
}

/// The speakers (and other playback devices) there are.
pub fn output_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    let host = cpal::default_host();
    let default = host.default_output_device().and_then(|d| d.id().ok());
    let devices = host.output_devices().map_err(device_error)?;
    Ok(devices
        .filter_map(|d| describe(&d, default.as_ref()))
        .collect())
}

fn describe(device: &cpal::Device, default: Option<&cpal::DeviceId>) -> Option<DeviceInfo> {
    let id = device.id().ok()?;
    let name = device
        .description()
        .map_or_else(|_| id.to_string(), |d| d.name().to_string());
    Some(DeviceInfo {
        is_default: Some(&id) == default,
        id: id.to_string(),
        name,
    })
}

/// The device `id` (from [`input_devices`]/[`output_devices`]), or the default one.
fn find(id: Option<&str>, input: bool) -> Result<cpal::Device, AudioError> {
    let host = cpal::default_host();
    let kind = if input { "input" } else { "output" };
    match id {
        None => if input {
            host.default_input_device()
        } else {
            host.default_output_device()
        }
        .ok_or_else(|| device_error(format!("there is no default {kind} device"))),
        Some(id) => {
            let parsed: cpal::DeviceId = id
                .parse()
                .map_err(|e| device_error(format!("{id:?} is not an audio device id: {e}")))?;
            host.device_by_id(&parsed)
                .ok_or_else(|| device_error(format!("no {kind} device {id:?}")))
        }
    }
}

/// Holds a cpal stream on a thread of its own (streams cannot move between threads on
/// every platform); dropping it stops the stream.
struct StreamThread {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StreamThread {
    /// Builds and starts a stream with `build` on a new thread; returns once it plays.
    fn start<F>(name: &str, build: F) -> Result<StreamThread, AudioError>
    where
        F: FnOnce() -> Result<cpal::Stream, AudioError> + Send + 'static,
    {
        let (started_tx, started_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let stream = build().and_then(|s| s.play().map(|()| s).map_err(device_error));
                match stream {
                    Ok(stream) => {
                        let _ = started_tx.send(Ok(()));
                        // Until the owner drops its handle.
                        let _ = stop_rx.recv();
                        drop(stream);
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                    }
                }
            })
            .map_err(device_error)?;
        let started = started_rx
            .recv()
            .map_err(|_| device_error("the audio thread stopped while starting"))?;
        started?;
        Ok(StreamThread {
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

/// How long dropping a stream waits for its thread.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Drop for StreamThread {
    fn drop(&mut self) {
        self.stop.take();
        let Some(thread) = self.thread.take() else {
            return;
        };
        // ALSA's PulseAudio plugin can block for ever closing a stream whose server
        // went away: the thread is then left behind rather than hanging its owner.
        let deadline = std::time::Instant::now() + STOP_WAIT;
        while !thread.is_finished() {
            if std::time::Instant::now() >= deadline {
                tracing::warn!(
                    thread = thread.thread().name().unwrap_or("audio"),
                    "the audio device did not close; left behind"
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = thread.join();
    }
}

/// A stream's failure, kept for the next call to report.
#[derive(Clone, Default)]
struct Failure(Arc<Mutex<Option<String>>>);

impl Failure {
    fn set(&self, error: cpal::Error) {
        use cpal::ErrorKind::StreamInvalidated;
        use cpal::ErrorKind::{DeviceNotAvailable, HostUnavailable, PermissionDenied};
        // cpal's stream ends on these; on anything else (an overrun, an I/O error the
        // PulseAudio plugin reports under load, a route that moved) it keeps running.
        let fatal = matches!(
            error.kind(),
            DeviceNotAvailable | HostUnavailable | PermissionDenied | StreamInvalidated
        );
        if !fatal {
            tracing::warn!(%error, "audio glitch");
            return;
        }
        if let Ok(mut failure) = self.0.lock() {
            failure.get_or_insert_with(|| error.to_string());
        }
    }

    fn check(&self) -> Result<(), AudioError> {
        match self.0.lock().ok().and_then(|f| f.clone()) {
            Some(error) => Err(device_error(format!("the audio device failed: {error}"))),
            None => Ok(()),
        }
    }
}

/// Captured blocks held for a reader at most: tens of seconds at the few milliseconds a
/// block devices deliver. A reader that far behind, or a device delivering faster than
/// real time (ALSA's `null`, which has no clock), loses blocks rather than memory.
const CAPTURE_QUEUE_BLOCKS: usize = 4096;

/// A capture device delivering 16 kHz mono.
pub struct Microphone {
    name: String,
    chunks: mpsc::Receiver<Vec<f32>>,
    /// Samples the device delivered that the queue had no room for.
    lost: Arc<AtomicU64>,
    /// The device's rate, the samples read from it, and since when (its opening: what
    /// it delivered before the first read is counted against that time).
    rate: u32,
    read: u64,
    since: std::time::Instant,
    resampler: StreamResampler,
    failure: Failure,
    _stream: StreamThread,
}

impl Microphone {
    /// Opens the input device `id`, or the default one, at its own rate.
    pub fn open(id: Option<&str>) -> Result<Microphone, AudioError> {
        let device = find(id, true)?;
        let name = describe(&device, None).map_or_else(|| "microphone".into(), |d| d.name);
        let supported = device.default_input_config().map_err(device_error)?;
        let format = supported.sample_format();
        let config: StreamConfig = supported.into();
        let (tx, chunks) = mpsc::sync_channel(CAPTURE_QUEUE_BLOCKS);
        let lost = Arc::new(AtomicU64::new(0));
        let dropped = lost.clone();
        let failure = Failure::default();
        let on_error = failure.clone();
        let channels = usize::from(config.channels.max(1));
        let rate = config.sample_rate;
        let stream = StreamThread::start("izwi-capture", move || {
            let on_error = move |e| on_error.set(e);
            macro_rules! build {
                ($t:ty) => {
                    device.build_input_stream::<$t, _, _>(
                        config,
                        move |data: &[$t], _| {
                            // Never blocks the device's thread.
                            if let Err(mpsc::TrySendError::Full(block)) =
                                tx.try_send(to_mono(data, channels))
                            {
                                dropped.fetch_add(block.len() as u64, Ordering::Relaxed);
                            }
                        },
                        on_error,
                        None,
                    )
                };
            }
            let stream = match format {
                SampleFormat::F32 => build!(f32),
                SampleFormat::I16 => build!(i16),
                SampleFormat::I32 => build!(i32),
                SampleFormat::U16 => build!(u16),
                other => return Err(device_error(format!("unsupported sample format {other}"))),
            };
            stream.map_err(device_error)
        })?;
        Ok(Microphone {
            name,
            chunks,
            lost,
            rate,
            read: 0,
            since: std::time::Instant::now(),
            resampler: StreamResampler::new(rate, ASR_SAMPLE_RATE)?,
            failure,
            _stream: stream,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next samples captured (16 kHz mono), waiting up to `timeout` for them:
    /// empty when none came in time. An error when the device failed or went away, or
    /// when audio was lost (the reader fell far behind, or the device delivers faster
    /// than real time): a recording with holes would be transcribed wrong.
    pub fn recv(&mut self, timeout: Duration) -> Result<Vec<f32>, AudioError> {
        self.failure.check()?;
        let mut out = Vec::new();
        match self.chunks.recv_timeout(timeout) {
            Ok(chunk) => {
                self.read += chunk.len() as u64;
                self.resampler.push(&chunk, &mut out)?;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => return Ok(out),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.failure.check()?;
                return Err(device_error("the microphone stopped"));
            }
        }
        // What else has arrived, so a slow caller catches up at once; at most a queue's
        // worth, so the caller gets its turn (to see a Stop) however fast blocks come.
        for _ in 0..CAPTURE_QUEUE_BLOCKS {
            let Ok(chunk) = self.chunks.try_recv() else {
                break;
            };
            self.read += chunk.len() as u64;
            self.resampler.push(&chunk, &mut out)?;
        }
        // A real device delivers in time, after a first burst at most; twice as fast
        // beyond a second of slack is a device without a clock.
        let due = f64::from(self.rate) * (self.since.elapsed().as_secs_f64() + 1.0);
        if self.read as f64 > 2.0 * due {
            return Err(device_error(format!(
                "{} delivers audio faster than real time: a device without a clock, such as \
                 ALSA's null device, cannot be used",
                self.name
            )));
        }
        let lost = self.lost.load(Ordering::Relaxed);
        if lost > 0 {
            return Err(device_error(format!(
                "{} captured {lost} samples that were not taken in time and are lost",
                self.name
            )));
        }
        Ok(out)
    }
}

fn poisoned() -> AudioError {
    device_error("the playback queue was poisoned")
}

fn to_mono<T>(data: &[T], channels: usize) -> Vec<f32>
where
    T: SizedSample,
    f32: FromSample<T>,
{
    data.chunks(channels)
        .map(|frame| frame.iter().map(|&s| f32::from_sample(s)).sum::<f32>() / channels as f32)
        .collect()
}

/// What the playback callback shares with [`Playback`].
#[derive(Default)]
struct PlayQueue {
    samples: Mutex<VecDeque<f32>>,
    /// Frames played since the last [`Playback::stop`] (or the start).
    played: AtomicU64,
}

/// A playback device: mono audio queued and played in order.
pub struct Playback {
    name: String,
    rate: u32,
    queue: Arc<PlayQueue>,
    /// Audio at another rate than the device's goes through one resampler per stretch
    /// of audio (a reply given piece by piece), so the pieces join without the dip a
    /// resampler started afresh makes at each edge. With its source rate.
    resampler: Mutex<Option<(u32, StreamResampler)>>,
    failure: Failure,
    _stream: StreamThread,
}

impl Playback {
    /// Opens the output device `id`, or the default one, at its own rate.
    pub fn open(id: Option<&str>) -> Result<Playback, AudioError> {
        let device = find(id, false)?;
        let name = describe(&device, None).map_or_else(|| "speaker".into(), |d| d.name);
        let supported = device.default_output_config().map_err(device_error)?;
        let format = supported.sample_format();
        let config: StreamConfig = supported.into();
        let queue = Arc::new(PlayQueue::default());
        let failure = Failure::default();
        let on_error = failure.clone();
        let channels = usize::from(config.channels.max(1));
        let rate = config.sample_rate;
        let shared = queue.clone();
        let stream = StreamThread::start("izwi-playback", move || {
            let on_error = move |e| on_error.set(e);
            macro_rules! build {
                ($t:ty) => {
                    device.build_output_stream::<$t, _, _>(
                        config,
                        move |data: &mut [$t], _| fill(&shared, data, channels),
                        on_error,
                        None,
                    )
                };
            }
            let stream = match format {
                SampleFormat::F32 => build!(f32),
                SampleFormat::I16 => build!(i16),
                SampleFormat::I32 => build!(i32),
                SampleFormat::U16 => build!(u16),
                other => return Err(device_error(format!("unsupported sample format {other}"))),
            };
            stream.map_err(device_error)
        })?;
        Ok(Playback {
            name,
            rate,
            queue,
            resampler: Mutex::default(),
            failure,
            _stream: stream,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `samples` (mono, `sample_rate` Hz) after what is already queued, as the
    /// continuation of what was played before at that rate: call [`Playback::end`] when
    /// the stretch of audio is whole, or the last milliseconds of one at another rate
    /// than the device's stay in the resampler.
    pub fn play(&self, samples: &[f32], sample_rate: u32) -> Result<(), AudioError> {
        self.failure.check()?;
        let mut out = Vec::new();
        {
            let mut resampler = self.resampler.lock().map_err(|_| poisoned())?;
            if resampler
                .as_ref()
                .is_some_and(|(rate, _)| *rate != sample_rate)
            {
                if let Some((_, done)) = resampler.take() {
                    done.finish(&mut out)?;
                }
            }
            if sample_rate == self.rate {
                out.extend_from_slice(samples);
            } else {
                let (_, stream) = match resampler.as_mut() {
                    Some(open) => open,
                    None => resampler
                        .insert((sample_rate, StreamResampler::new(sample_rate, self.rate)?)),
                };
                stream.push(samples, &mut out)?;
            }
        }
        self.queue
            .samples
            .lock()
            .map_err(|_| poisoned())?
            .extend(out);
        Ok(())
    }

    /// The stretch of audio given to [`Playback::play`] is whole: what the resampler
    /// still holds of it is queued.
    pub fn end(&self) -> Result<(), AudioError> {
        let held = self.resampler.lock().map_err(|_| poisoned())?.take();
        if let Some((_, stream)) = held {
            let mut tail = Vec::new();
            stream.finish(&mut tail)?;
            self.queue
                .samples
                .lock()
                .map_err(|_| poisoned())?
                .extend(tail);
        }
        Ok(())
    }

    /// Seconds played since the last [`Playback::stop`] (or the start).
    pub fn played_seconds(&self) -> f64 {
        self.queue.played.load(Ordering::Relaxed) as f64 / f64::from(self.rate)
    }

    /// Whether everything queued has been played.
    pub fn is_drained(&self) -> bool {
        self.queue.samples.lock().map_or(true, |q| q.is_empty())
    }

    /// Drops what is queued, at once, and restarts the played count.
    pub fn stop(&self) {
        if let Ok(mut resampler) = self.resampler.lock() {
            *resampler = None;
        }
        if let Ok(mut queue) = self.queue.samples.lock() {
            queue.clear();
        }
        self.queue.played.store(0, Ordering::Relaxed);
    }

    /// Whether the device has failed since it was opened.
    pub fn check(&self) -> Result<(), AudioError> {
        self.failure.check()
    }
}

fn fill<T>(queue: &PlayQueue, data: &mut [T], channels: usize)
where
    T: SizedSample + FromSample<f32>,
{
    // Never wait on the audio thread: a queue held elsewhere plays silence this once.
    let Ok(mut samples) = queue.samples.try_lock() else {
        data.fill(T::EQUILIBRIUM);
        return;
    };
    let mut played = 0u64;
    for frame in data.chunks_mut(channels) {
        let value = match samples.pop_front() {
            Some(v) => {
                played += 1;
                T::from_sample(v)
            }
            None => T::EQUILIBRIUM,
        };
        frame.fill(value);
    }
    queue.played.fetch_add(played, Ordering::Relaxed);
}
