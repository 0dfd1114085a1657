//! Runtime events drawn as progress bars on standard error.

use std::collections::HashMap;
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use izwi_runtime::{Event, EventSink};

pub struct Bars {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    pub fn new() -> Self {
        Self {
            multi: MultiProgress::new(),
            bars: Mutex::new(HashMap::new()),
        }
    }

    fn bar(&self, key: String, make: impl FnOnce() -> ProgressBar) -> ProgressBar {
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        bars.entry(key)
            .or_insert_with(|| self.multi.add(make()))
            .clone()
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl EventSink for Bars {
    fn emit(&self, event: Event) {
        match event {
            Event::JobQueued { job } => {
                let name = std::path::Path::new(&job.input)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or(job.input.clone());
                let bar = self.bar(format!("job{}", job.id), || ProgressBar::new(1));
                bar.set_style(style(
                    "{msg:30!} {bar:30} {percent:>3}% {elapsed} (ETA {eta})",
                ));
                bar.set_message(name);
            }
            Event::JobProgress {
                job_id,
                windows_done,
                windows_total,
                ..
            } => {
                let bar = self.bar(format!("job{job_id}"), || ProgressBar::new(1));
                bar.set_length(windows_total as u64);
                bar.set_position(windows_done as u64);
            }
            Event::JobFinished { job_id, .. } => {
                self.bar(format!("job{job_id}"), || ProgressBar::new(1))
                    .finish();
            }
            Event::Download(p) => {
                let bar = self.bar(format!("download{}", p.model_id), || {
                    let bar = ProgressBar::new(p.total);
                    bar.set_style(style(
                        "{msg:24!} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} (ETA {eta})",
                    ));
                    bar
                });
                bar.set_message(p.model_id.clone());
                bar.set_length(p.total);
                bar.set_position(p.downloaded);
                if p.done {
                    bar.finish();
                }
            }
            _ => {}
        }
    }
}
