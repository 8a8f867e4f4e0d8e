//! Native file functions: read and write `.npy` files, and replace files atomically.
//!
//! Every output goes through [`write_atomic`]: the bytes are written to a temporary file in the
//! destination's directory, flushed to disk, then renamed over the destination, so a failure at any
//! point leaves either the old file or no file, never a partial one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::Tensor;
use crate::error::{FdsrError, Result};

/// Reads an `.npy` file (see [`Tensor::from_npy_bytes`] for what is accepted); errors name the path.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Tensor> {
    let path = path.as_ref();
    let bytes = fs::read(path).map_err(|source| io_error(path, source))?;
    super::parse_npy(&bytes).map_err(|msg| FdsrError::InvalidTensor(format!("{}: {msg}", path.display())))
}

/// Writes `tensor` as a little-endian float32 C-order `.npy` file, atomically.
pub fn write_npy(path: impl AsRef<Path>, tensor: &Tensor) -> Result<()> {
    write_atomic(path, &tensor.to_npy_bytes())
}

/// Replaces the file at `path` with `bytes`: all of them or, on error, no change at all.
///
/// The temporary file (`.NAME.tmp-PID-N` beside `path`) is removed on every error path.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let path = path.as_ref();
    let tmp = temp_path(path)?;
    let result = write_then_rename(&tmp, path, bytes);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file: File =
        OpenOptions::new().write(true).create_new(true).open(tmp).map_err(|source| io_error(path, source))?;
    file.write_all(bytes).map_err(|source| io_error(path, source))?;
    file.sync_all().map_err(|source| io_error(path, source))?;
    drop(file);
    fs::rename(tmp, path).map_err(|source| io_error(path, source))
}

/// A fresh temporary name in the same directory as `path` (so the rename stays on one filesystem).
fn temp_path(path: &Path) -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io_error(path, std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name")))?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id());
    Ok(path.with_file_name(tmp_name))
}

/// `FdsrError::Io` for `path`.
fn io_error(path: &Path, source: std::io::Error) -> FdsrError {
    FdsrError::Io { path: path.display().to_string(), source }
}
