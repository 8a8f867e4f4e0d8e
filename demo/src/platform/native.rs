//! Native: a task runs to completion at once (the frame waits for one training step).

use std::future::Future;

use crate::status::Status;

/// Runs `task` now, blocking until it is done.
pub fn spawn(task: impl Future<Output = ()> + 'static) {
    pollster::block_on(task);
}

/// Natively nothing outside the app reads the status.
pub fn publish(_status: &Status) {}
