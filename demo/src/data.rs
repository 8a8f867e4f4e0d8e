//! The run's images: a small seeded subset of Fashion-MNIST (from IDX files on disk natively,
//! from the bundle's static files on the web), or synthetic images for tests.

use fdsr::data::Dataset;
use fdsr::engine::session::limit;

use crate::run::Data;

/// Training images of the subset.
pub const TRAIN: usize = 2048;
/// Test images of the subset.
pub const TEST: usize = 512;

/// The subset of `train` and `test` (seeded, as `fdsr train --limit-*` takes it).
pub fn subset(train: &Dataset, test: &Dataset, source: &str) -> fdsr::Result<Data> {
    Ok(Data { train: limit(train, TRAIN, 0)?, test: limit(test, TEST, 1)?, source: source.to_string() })
}

/// Data from the four IDX files' bytes (train images, train labels, test images, test labels).
pub fn from_idx(files: [&[u8]; 4], source: &str) -> fdsr::Result<Data> {
    let train = Dataset::from_idx(files[0], files[1])?;
    let test = Dataset::from_idx(files[2], files[3])?;
    Ok(Data { train, test, source: source.to_string() })
}

/// Synthetic 28×28 images of 10 classes (tests; no files needed).
pub fn synthetic(train: usize, test: usize) -> Data {
    Data {
        train: fdsr::data::synthetic::images(train, 28, 28, 10, 1),
        test: fdsr::data::synthetic::images(test, 28, 28, 10, 2),
        source: "synthetic".to_string(),
    }
}

/// Fashion-MNIST from `dir` (natively), fetched there first if it is missing (as `fdsr train`
/// does on first use).
#[cfg(not(target_arch = "wasm32"))]
pub fn fetch_and_load(dir: &std::path::Path) -> fdsr::Result<Data> {
    use fdsr::data::{DatasetName, Split};
    if let Some(report) = fdsr::data::ensure(DatasetName::FashionMnist, dir)? {
        eprintln!("fetched Fashion-MNIST into {}: {report}", dir.display());
    }
    let train = Dataset::load(dir, Split::Train)?;
    let test = Dataset::load(dir, Split::Test)?;
    subset(&train, &test, &format!("Fashion-MNIST {TRAIN}+{TEST} ({})", dir.display()))
}
