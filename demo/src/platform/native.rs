//! Native: a task runs to completion at once (the frame waits for one training step), and the
//! status goes to the `--status-file` when one was given (the Xvfb screenshot test reads it).

use std::future::Future;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::status::Status;

static STATUS_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Runs `task` now, blocking until it is done.
pub fn spawn(task: impl Future<Output = ()> + 'static) {
    pollster::block_on(task);
}

/// Makes [`publish`] write the status as JSON to `path` (once per process).
pub fn set_status_file(path: PathBuf) {
    let _ = STATUS_FILE.set(path);
}

/// Writes the status to the status file, if one was set (atomically, so a reader never sees
/// half of it; a failed write is reported once per frame on stderr and does not stop the run).
pub fn publish(status: &Status) {
    if let Some(path) = STATUS_FILE.get() {
        if let Err(e) = fdsr::io::write_atomic(path, status.to_json().as_bytes()) {
            eprintln!("status file: {e}");
        }
    }
}
