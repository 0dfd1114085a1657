//! `stream=true` on transcriptions: the text as server-sent events in OpenAI's shape,
//! `transcript.text.delta` events (`delta`) as the windows are transcribed, then one
//! `transcript.text.done` with the whole `text`. Windows of a long file finish out of
//! order: a window's text is held back until every earlier window's has been sent, so
//! the deltas, joined, are the text in order.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{self, Sse};
use axum::response::{IntoResponse, Response};
use izwi_runtime::{Event, JobStatus, Runtime, Segment};
use serde_json::json;
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::job::RequestJob;

/// Follows the job whose events `events` receives (subscribed before the job was
/// started) as an SSE response. The response dropped early (the client went away),
/// its `RequestJob` cancels the job.
pub(crate) fn respond(
    runtime: Arc<Runtime>,
    events: broadcast::Receiver<Event>,
    job: RequestJob,
) -> Response {
    let stream = TranscriptStream {
        runtime,
        events: Some(events),
        job,
        text: InOrder::default(),
        out: VecDeque::new(),
        ended: false,
    };
    let body = futures::stream::unfold(stream, |mut stream| async move {
        stream.next().await.map(|data| {
            (
                Ok::<_, Infallible>(sse::Event::default().data(data)),
                stream,
            )
        })
    });
    Sse::new(body).into_response()
}

struct TranscriptStream {
    runtime: Arc<Runtime>,
    /// None once events were missed (a slow client): the rest of the text then comes
    /// from the finished job.
    events: Option<broadcast::Receiver<Event>>,
    job: RequestJob,
    text: InOrder,
    /// Events ready to send.
    out: VecDeque<String>,
    ended: bool,
}

impl TranscriptStream {
    /// The next event's data, or None once the job's end has been sent.
    async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(data) = self.out.pop_front() {
                return Some(data);
            }
            if self.ended {
                return None;
            }
            self.follow().await;
        }
    }

    /// Waits for what the job does next and queues the events it makes.
    async fn follow(&mut self) {
        let Some(events) = &mut self.events else {
            let job = self.job.finished().await;
            return self.end(job.map(|_| ())).await;
        };
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                self.events = None;
                return;
            }
            Err(broadcast::error::RecvError::Closed) => {
                return self
                    .end(Err(ApiError::internal("the server is stopping")))
                    .await;
            }
        };
        match event {
            Event::JobSegments {
                job_id,
                window,
                segments,
            } if job_id == self.job.id() => {
                let delta = self.text.window(window, text_of(&segments));
                self.send_delta(delta);
            }
            Event::JobFinished {
                job_id,
                status,
                error,
            } if job_id == self.job.id() => {
                self.job.ended();
                let outcome = match status {
                    JobStatus::Done => Ok(()),
                    _ => Err(ApiError::internal(format!(
                        "the transcription stopped: {}",
                        error.unwrap_or_else(|| format!("{status:?}").to_lowercase())
                    ))),
                };
                self.end(outcome).await;
            }
            _ => {}
        }
    }

    fn send_delta(&mut self, delta: Option<String>) {
        if let Some(delta) = delta {
            self.out
                .push_back(json!({ "type": "transcript.text.delta", "delta": delta }).to_string());
        }
    }

    /// The job is over: the text not sent yet (all of it when events were missed) and
    /// the whole text, or the error that ended it.
    async fn end(&mut self, outcome: Result<(), ApiError>) {
        self.ended = true;
        let text = match outcome {
            Ok(()) => self.text().await,
            Err(e) => Err(e),
        };
        match text {
            Ok(text) => {
                let rest = self.text.rest(&text);
                self.send_delta(rest);
                self.out
                    .push_back(json!({ "type": "transcript.text.done", "text": text }).to_string());
            }
            Err(e) => self.out.push_back(
                json!({ "error": { "message": e.message, "type": e.kind, "code": e.code } })
                    .to_string(),
            ),
        }
    }

    /// The finished job's transcript, as the whole (not streamed) answer gives it.
    async fn text(&self) -> Result<String, ApiError> {
        let record = self
            .runtime
            .transcript_for_job(self.job.id())
            .await?
            .ok_or_else(|| {
                ApiError::internal(format!("job {} left no transcript", self.job.id()))
            })?;
        Ok(self.runtime.transcript_for_export(record.id).await?.text())
    }
}

/// The windows' text in order as they finish out of order: each window's held back
/// until the earlier ones are done.
#[derive(Default)]
struct InOrder {
    /// The text of windows done while an earlier one is not, by window.
    held: BTreeMap<usize, String>,
    next_window: usize,
    /// The text let out so far: the whole text starts with it.
    sent: String,
}

impl InOrder {
    /// Window `index` is done with `text`: the text that can be let out now, if any.
    fn window(&mut self, index: usize, text: String) -> Option<String> {
        self.held.insert(index, text);
        let mut delta = String::new();
        while let Some(text) = self.held.remove(&self.next_window) {
            self.next_window += 1;
            self.add(&mut delta, &text);
        }
        self.let_out(delta)
    }

    /// The end of `whole`, the finished text, not let out yet (all of it when windows
    /// were missed).
    fn rest(&mut self, whole: &str) -> Option<String> {
        let rest = whole.strip_prefix(self.sent.as_str())?.trim_start();
        let mut delta = String::new();
        self.add(&mut delta, rest);
        self.let_out(delta)
    }

    /// `text` added to `delta`, a space apart from what comes before it.
    fn add(&self, delta: &mut String, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.sent.is_empty() || !delta.is_empty() {
            delta.push(' ');
        }
        delta.push_str(text);
    }

    fn let_out(&mut self, delta: String) -> Option<String> {
        if delta.is_empty() {
            return None;
        }
        self.sent.push_str(&delta);
        Some(delta)
    }
}

/// A window's text as the whole transcript joins it: its segments' text trimmed, the
/// empty ones left out, a space apart.
fn text_of(segments: &[Segment]) -> String {
    segments
        .iter()
        .map(|s| s.text.trim())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_let_out_in_order_as_soon_as_they_can_be() {
        let mut text = InOrder::default();
        assert_eq!(text.window(2, "three".into()), None);
        assert_eq!(text.window(0, "one".into()), Some("one".into()));
        // A window with no speech holds nothing back.
        assert_eq!(text.window(3, String::new()), None);
        assert_eq!(text.window(1, "two".into()), Some(" two three".into()));
        assert_eq!(text.window(4, "four".into()), Some(" four".into()));
        assert_eq!(text.rest("one two three four"), None);
        assert_eq!(text.sent, "one two three four");
    }

    #[test]
    fn the_rest_is_what_the_finished_text_adds() {
        let mut text = InOrder::default();
        assert_eq!(text.window(1, "two".into()), None);
        // Window 0's event was missed: the finished text brings it and the rest.
        assert_eq!(text.rest("one two"), Some("one two".into()));
        let mut text = InOrder::default();
        assert_eq!(text.window(0, "one".into()), Some("one".into()));
        assert_eq!(text.rest("one two"), Some(" two".into()));
    }
}
