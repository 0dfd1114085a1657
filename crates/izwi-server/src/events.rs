//! The runtime's events, fanned out to the requests that follow their jobs as they run
//! (speech streamed sentence by sentence). A request subscribes before it starts its
//! job, so it misses none of its events; events nobody follows are dropped at once.

use izwi_runtime::{Event, EventSink};
use tokio::sync::broadcast;

/// Events held for a slow subscriber before it loses some (and its request fails). A
/// sentence of speech is two events (its audio and the job's progress), and every job's
/// events count: a client that reads the audio as it comes stays far within it.
const BACKLOG: usize = 256;

pub struct ServerEvents(broadcast::Sender<Event>);

impl ServerEvents {
    pub fn new() -> Self {
        Self(broadcast::channel(BACKLOG).0)
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.0.subscribe()
    }

    /// Whether a request follows the events now: a shell that forwards its events here
    /// need not copy them otherwise.
    pub fn is_followed(&self) -> bool {
        self.0.receiver_count() > 0
    }
}

impl Default for ServerEvents {
    fn default() -> Self {
        Self::new()
    }
}

impl EventSink for ServerEvents {
    fn emit(&self, event: Event) {
        // No subscriber is not an error: most events are followed by no request.
        let _ = self.0.send(event);
    }
}
