//! Izwi's models: the catalog of what Izwi runs (each file pinned to a commit, size
//! and sha256), downloads into the Hugging Face cache (resumable, verified against
//! the pins, cancellable, with progress), removal, and import of local folders.
//!
//! A model is installed when every file it needs is in place and whole: downloads
//! land in the cache only after they are complete and match the catalog's pins, and
//! imports appear only once their manifest is written.

mod cache;
mod catalog;
mod download;
mod error;
mod hub;
mod import;
mod progress;
mod verify;

pub use catalog::{catalog, CatalogEntry, CatalogFile, Family, ModelTask, WHISPER_LANGUAGES};
pub use error::HubError;
pub use hub::{Hub, HubConfig, ModelInfo, ModelSource, ModelStatus};
pub use import::Converter;
pub use progress::DownloadProgress;
pub use tokio_util::sync::CancellationToken;
