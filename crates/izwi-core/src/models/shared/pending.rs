//! Requests a caller prepares before giving them to the engine, and an executor takes up
//! the first time the engine schedules them: what a request needs beyond its token ids
//! (embeddings, audio, a sampler, where its output goes), which the engine does not carry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use candle_core::Result;

use crate::engine::RequestId;

/// The table between the callers' handle and the executor; clones share it.
pub struct PendingRequests<T> {
    table: Arc<Mutex<HashMap<RequestId, T>>>,
    /// The handle's name, for the error when a request was not prepared through it.
    handle: &'static str,
}

impl<T> Clone for PendingRequests<T> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            handle: self.handle,
        }
    }
}

impl<T> PendingRequests<T> {
    pub fn new(handle: &'static str) -> Self {
        Self {
            table: Arc::default(),
            handle,
        }
    }

    pub fn insert(&self, id: RequestId, request: T) -> Result<()> {
        self.table
            .lock()
            .map_err(|_| candle_core::Error::msg("the request table is poisoned"))?
            .insert(id, request);
        Ok(())
    }

    /// The prepared request `id`, taken out: an executor's first sight of it.
    pub fn take(&self, id: &RequestId) -> Result<T> {
        let taken = self
            .table
            .lock()
            .map_err(|_| candle_core::Error::msg("the request table is poisoned"))?
            .remove(id);
        taken.ok_or_else(|| {
            candle_core::Error::msg(format!(
                "request {id} was not prepared through {}",
                self.handle
            ))
        })
    }

    /// Drops a prepared request the engine refused or that ended unseen.
    pub fn cancel(&self, id: &RequestId) {
        if let Ok(mut table) = self.table.lock() {
            table.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_taken_once_and_an_unknown_one_is_refused_by_name() {
        let pending = PendingRequests::new("TestRequests");
        let id = RequestId::generate();
        pending.clone().insert(id.clone(), 7).expect("inserted");
        assert_eq!(pending.take(&id).expect("prepared"), 7);
        let again = pending.take(&id).expect_err("taken already").to_string();
        assert!(
            again.contains("was not prepared through TestRequests"),
            "{again}"
        );
        pending.insert(id.clone(), 8).expect("inserted");
        pending.cancel(&id);
        assert!(pending.take(&id).is_err());
    }
}
