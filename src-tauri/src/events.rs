//! Events to the webview: every `izwi_runtime::Event` is emitted as the typed
//! tauri-specta event `RuntimeEvent` (`events.runtimeEvent.listen(e => e.payload)`), and
//! the files a second launch was opened with as `FilesOpened`.

use izwi_runtime::{Event, EventSink};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Runtime};
use tauri_specta::Event as _;

/// The payload is the runtime's event itself, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(transparent)]
pub struct RuntimeEvent(pub Event);

/// Files a second launch of Izwi was opened with (it hands them over and exits), to be
/// queued as the files of the first launch are.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
#[serde(transparent)]
pub struct FilesOpened(pub Vec<String>);

/// Forwards the runtime's events to every webview of the app.
pub struct WebviewEvents<R: Runtime> {
    app: AppHandle<R>,
}

impl<R: Runtime> WebviewEvents<R> {
    pub fn new(app: AppHandle<R>) -> Self {
        Self { app }
    }
}

impl<R: Runtime> EventSink for WebviewEvents<R> {
    fn emit(&self, event: Event) {
        if let Err(e) = RuntimeEvent(event).emit(&self.app) {
            tracing::warn!(error = %e, "could not send an event to the webview");
        }
    }
}
