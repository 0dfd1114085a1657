//! Download progress as the shells show it: bytes of the whole model, rate and ETA.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One report on a model download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DownloadProgress {
    pub model_id: String,
    /// The file being fetched now.
    pub file: String,
    /// Bytes of the model in place (files already present and resumed parts included).
    pub downloaded: u64,
    pub total: u64,
    /// Over the last few seconds.
    pub bytes_per_second: f64,
    /// None until a rate is known.
    pub eta_seconds: Option<f64>,
    pub done: bool,
}

pub type ProgressFn = Arc<dyn Fn(&DownloadProgress) + Send + Sync>;

/// Reports at most this often, and always the last report.
const REPORT_EVERY: Duration = Duration::from_millis(100);
/// The rate is measured over this window.
const RATE_WINDOW: Duration = Duration::from_secs(3);

struct State {
    report: DownloadProgress,
    /// (when, bytes fetched this session) samples within the rate window.
    samples: Vec<(Instant, u64)>,
    fetched: u64,
    last_report: Option<Instant>,
}

/// The progress of one model download, across its files.
#[derive(Clone)]
pub struct Tracker {
    state: Arc<Mutex<State>>,
    on_progress: ProgressFn,
}

impl Tracker {
    pub fn new(model_id: &str, total: u64, already: u64, on_progress: ProgressFn) -> Self {
        let report = DownloadProgress {
            model_id: model_id.to_string(),
            file: String::new(),
            downloaded: already,
            total,
            bytes_per_second: 0.0,
            eta_seconds: None,
            done: false,
        };
        Self {
            state: Arc::new(Mutex::new(State {
                report,
                samples: vec![(Instant::now(), 0)],
                fetched: 0,
                last_report: None,
            })),
            on_progress,
        }
    }

    /// A new file starts; `resumed` of its bytes were already on disk and counted.
    pub fn start_file(&self, file: &str) {
        let mut state = self.lock();
        state.report.file = file.to_string();
        self.emit(&mut state, true);
    }

    /// Bytes of a file that needs no fetching (present, or resumed from a part file).
    pub fn skip(&self, bytes: u64) {
        let mut state = self.lock();
        state.report.downloaded = (state.report.downloaded + bytes).min(state.report.total);
        self.emit(&mut state, false);
    }

    pub fn fetched(&self, bytes: u64) {
        let mut state = self.lock();
        let now = Instant::now();
        state.fetched += bytes;
        let fetched = state.fetched;
        state.samples.push((now, fetched));
        let keep_from = state
            .samples
            .iter()
            .position(|(t, _)| now.duration_since(*t) <= RATE_WINDOW)
            .unwrap_or(0)
            .saturating_sub(1);
        state.samples.drain(..keep_from);
        state.report.downloaded = (state.report.downloaded + bytes).min(state.report.total);
        let (t0, b0) = state.samples[0];
        let secs = now.duration_since(t0).as_secs_f64();
        if secs > 0.0 {
            let rate = (fetched - b0) as f64 / secs;
            state.report.bytes_per_second = rate;
            let left = state.report.total - state.report.downloaded;
            state.report.eta_seconds = (rate > 0.0).then(|| left as f64 / rate);
        }
        self.emit(&mut state, false);
    }

    pub fn finish(&self) {
        let mut state = self.lock();
        state.report.downloaded = state.report.total;
        state.report.eta_seconds = Some(0.0);
        state.report.done = true;
        self.emit(&mut state, true);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic in a progress callback must not stop the download's bookkeeping.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn emit(&self, state: &mut State, always: bool) {
        let now = Instant::now();
        let due = state
            .last_report
            .is_none_or(|t| now.duration_since(t) >= REPORT_EVERY);
        if always || due {
            state.last_report = Some(now);
            (self.on_progress)(&state.report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_resumed_bytes_and_reports_rate() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let tracker = Tracker::new(
            "m",
            1000,
            100,
            Arc::new(move |p: &DownloadProgress| sink.lock().unwrap().push(p.clone())),
        );
        tracker.start_file("a");
        tracker.skip(200);
        std::thread::sleep(Duration::from_millis(20));
        tracker.fetched(300);
        tracker.start_file("b");
        tracker.finish();
        let seen = seen.lock().unwrap();
        // 100 present + 200 resumed + 300 fetched.
        let at_b = seen.iter().find(|p| p.file == "b").unwrap();
        assert_eq!(at_b.downloaded, 600);
        assert!(at_b.bytes_per_second > 0.0 && at_b.eta_seconds.is_some());
        let last = seen.last().unwrap();
        assert!(last.done);
        assert_eq!(last.downloaded, 1000);
        assert!(seen.windows(2).all(|w| w[0].downloaded <= w[1].downloaded));
    }
}
