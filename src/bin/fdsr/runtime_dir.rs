//! A private `XDG_RUNTIME_DIR` for Mesa's drivers when the environment has none.
//!
//! Mesa's software Vulkan driver (lavapipe) prints `error: XDG_RUNTIME_DIR is invalid or not set`
//! when the variable is missing or names no folder (a root shell in a container, CI), with the
//! same `error:` prefix as fdsr's own errors, although nothing is wrong. Before the wgpu instance
//! exists, [`ensure`] points it at a fresh folder that only this user can enter; the folder is
//! removed when the returned guard drops. Elsewhere than Linux and the BSDs it does nothing.

use std::path::PathBuf;

/// Removes the folder it holds when dropped.
pub struct Guard(Option<PathBuf>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Sets `XDG_RUNTIME_DIR` to a new private folder when it is unset or not a folder. Call it early
/// in `main`, before any other thread or the wgpu instance exists.
pub fn ensure() -> Guard {
    if !cfg!(all(unix, not(target_os = "macos"))) {
        return Guard(None);
    }
    let current = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    if current.is_some_and(|d| d.is_absolute() && d.is_dir()) {
        return Guard(None);
    }
    match private_dir() {
        Some(dir) => {
            // SAFETY-free in edition 2021; no other thread exists yet (see above).
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
            Guard(Some(dir))
        }
        None => Guard(None),
    }
}

/// A new folder `fdsr-runtime-PID-N` in the temporary folder with mode 0700, or `None`.
fn private_dir() -> Option<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    (0..16).find_map(|n| {
        let dir = std::env::temp_dir().join(format!("fdsr-runtime-{}-{n}", std::process::id()));
        builder.create(&dir).ok().map(|()| dir)
    })
}
