//! Request timeouts (`izwi serve --request-timeout`): a request not answered in time gets
//! 504, and one whose answer is still being streamed then is cut off. Either way its job
//! is cancelled (the handler, or the stream, is dropped with its `RequestJob`), and the
//! history says the request timed out.

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::{Stream, StreamExt};
use tokio::time::Instant;

/// When a request must be answered by: every request carries one (as an extension) for
/// the jobs it starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// None when requests may take as long as they need.
    at: Option<Instant>,
    limit: Duration,
}

impl Deadline {
    /// A request starting now, to be answered within `limit` (none when None).
    pub fn starting_now(limit: Option<Duration>) -> Self {
        Self {
            at: limit.map(|limit| Instant::now() + limit),
            limit: limit.unwrap_or_default(),
        }
    }

    pub fn at(&self) -> Option<Instant> {
        self.at
    }

    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// What a job cancelled for it is marked with in the history.
    pub fn reason(&self) -> String {
        format!(
            "the API request timed out after {} s",
            self.limit.as_secs_f64()
        )
    }
}

/// `body` until `at`: an answer still being sent then ends with an error, which breaks
/// the connection, so the client sees it unfinished rather than cut short in silence.
pub(crate) fn cut_off(
    body: impl Stream<Item = Result<Bytes, axum::Error>> + Send + Unpin + 'static,
    at: Instant,
    reason: String,
) -> Body {
    let state = Some((body, reason));
    Body::from_stream(futures::stream::unfold(state, move |state| async move {
        let (mut body, reason) = state?;
        tokio::select! {
            chunk = body.next() => chunk.map(|chunk| (chunk, Some((body, reason)))),
            () = tokio::time::sleep_until(at) => {
                Some((Err(axum::Error::new(std::io::Error::other(reason))), None))
            }
        }
    }))
}
