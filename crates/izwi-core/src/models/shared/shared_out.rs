//! An output buffer that parallel tasks write side by side through a raw pointer, each
//! its own part of it (rows, columns or tiles), where splitting it into `&mut` slices
//! per task does not fit the parts' shape.

pub(super) struct SharedOut(pub(super) *mut f32);

// SAFETY: each user has its tasks write disjoint parts of the buffer, and holds the
// buffer for as long as the tasks run.
unsafe impl Sync for SharedOut {}
