//! Izwi's models: the catalog of what Izwi runs, downloads into the Hugging Face cache
//! (through hf-hub: resumable, verified, cancellable, with progress), removal, and
//! import of local folders.
//!
//! A model is installed when every file it needs is in place and whole: downloads
//! land in the cache only after they are complete and their checksum matches the
//! hub's, and imports appear only once their manifest is written.

mod cache;
mod catalog;
mod download;
mod error;
mod hub;
mod import;
mod progress;
mod verify;

pub use catalog::{catalog, CatalogEntry, Family, ModelTask};
pub use error::HubError;
pub use hub::{Hub, HubConfig, ModelInfo, ModelSource, ModelStatus};
pub use progress::DownloadProgress;
pub use tokio_util::sync::CancellationToken;
