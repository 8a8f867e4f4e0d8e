//! Unit tests of `.npy` parsing and writing: round trips, one test per rejected input, atomic writes.

use super::*;

/// An `.npy` 1.0 file with this header dict text and data bytes.
fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

fn f32_le(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn err(bytes: &[u8]) -> String {
    match Tensor::from_npy_bytes(bytes) {
        Ok(t) => panic!("accepted {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn round_trip_every_rank() {
    for shape in [vec![5], vec![2, 3], vec![2, 1, 3], vec![2, 3, 4, 5]] {
        let n: usize = shape.iter().product();
        let t = Tensor::new(shape, (0..n).map(|i| i as f32 * 0.5 - 3.0).collect()).unwrap();
        let bytes = t.to_npy_bytes();
        assert_eq!(&bytes[..6], b"\x93NUMPY");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0, "data is 64-byte aligned");
        assert_eq!(Tensor::from_npy_bytes(&bytes).unwrap(), t);
    }
}

#[test]
fn reads_f16_and_big_endian() {
    let halves: Vec<u8> = [1.5f32, -2.0, 65504.0].iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
    let t = Tensor::from_npy_bytes(&npy("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", &halves)).unwrap();
    assert_eq!(t, Tensor { shape: vec![3], data: vec![1.5, -2.0, 65504.0] });

    let be: Vec<u8> = [1.25f32, -7.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    let t = Tensor::from_npy_bytes(&npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 2)}", &be)).unwrap();
    assert_eq!(t.data, vec![1.25, -7.0]);

    let be16: Vec<u8> = [0.5f32].iter().flat_map(|&v| half::f16::from_f32(v).to_be_bytes()).collect();
    let t = Tensor::from_npy_bytes(&npy("{\"shape\": [1], \"fortran_order\": False, \"descr\": \">f2\"}", &be16));
    assert_eq!(t.unwrap().data, vec![0.5]);
}

#[test]
fn rejects_non_npy() {
    assert!(err(b"").contains("not an .npy file"));
    assert!(err(b"PK\x03\x04 this is a zip").contains("not an .npy file"));
    assert!(err(b"\x93NUMPY\x07\x00").contains("version 7.0"));
}

#[test]
fn names_unsupported_dtypes() {
    for (descr, name) in [
        ("<f8", "float64"),
        ("<i4", "int32"),
        ("|u1", "uint8"),
        ("|b1", "bool"),
        ("<c8", "complex64"),
        ("|O", "object"),
    ] {
        let e = err(&npy(&format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1,), }}"), &[0; 8]));
        assert!(e.contains(&format!("unsupported dtype {name}")), "{descr}: {e}");
    }
    let e = err(&npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", &[0; 4]));
    assert!(e.contains("structured"), "{e}");
}

#[test]
fn rejects_fortran_order() {
    let e = err(&npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", &f32_le(&[0.0; 4])));
    assert!(e.contains("Fortran-order"), "{e}");
}

#[test]
fn rejects_bad_ranks_and_empty_tensors() {
    let scalar = err(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &f32_le(&[1.0])));
    assert!(scalar.contains("rank 0"), "{scalar}");
    let rank5 = err(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }", &f32_le(&[1.0])));
    assert!(rank5.contains("rank 5"), "{rank5}");
    let empty = err(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }", &[]));
    assert!(empty.contains("empty tensor"), "{empty}");
    assert!(Tensor::new(vec![], vec![]).is_err());
    assert!(Tensor::new(vec![2, 2], vec![0.0; 3]).is_err());
}

#[test]
fn rejects_truncated_and_oversized_files() {
    let full = Tensor::new(vec![4, 4], vec![1.0; 16]).unwrap().to_npy_bytes();
    for cut in [7, 9, 30, full.len() - 1] {
        let e = err(&full[..cut]);
        assert!(e.contains("truncated") || e.contains("not an .npy"), "cut {cut}: {e}");
    }
    assert!(err(&full[..full.len() - 4]).contains("truncated data"));
    let mut long = full.clone();
    long.push(0);
    assert!(err(&long).contains("unexpected bytes"));
    let huge =
        err(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", &[]));
    assert!(huge.contains("too large") || huge.contains("more values"), "{huge}");
    // npyz 0.9 panics on this one (see npy_header's module doc).
    let npyz_panics = err(&npy(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
        &[0; 8],
    ));
    assert!(npyz_panics.contains("more values"), "{npyz_panics}");
    let giant = err(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", &[]));
    assert!(giant.contains("too large"), "{giant}");
}

#[test]
fn rejects_malformed_headers() {
    for dict in [
        "not a dict",
        "{'descr': '<f4', 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,) ",
        "{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': ((((((((((((((((((1,)))))))))))))))))), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
    ] {
        let e = err(&npy(dict, &f32_le(&[1.0])));
        assert!(e.starts_with("invalid tensor: "), "{dict}: {e}");
    }
    let mut bad_len = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", &f32_le(&[1.0]));
    bad_len[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
    assert!(err(&bad_len).contains("truncated .npy header"));
}

#[test]
fn check_finite_names_the_first_bad_value() {
    let mut t = Tensor::new(vec![2, 3], vec![0.0; 6]).unwrap();
    assert!(t.check_finite().is_ok());
    t.data[4] = f32::INFINITY;
    t.data[5] = f32::NAN;
    let e = t.check_finite().unwrap_err().to_string();
    assert!(e.contains("inf at index 4 [1, 1]"), "{e}");
    t.data[4] = 0.0;
    assert!(t.check_finite().unwrap_err().to_string().contains("NaN at index 5 [1, 2]"));
}

#[cfg(not(target_arch = "wasm32"))]
mod files {
    use super::*;
    use std::path::PathBuf;

    /// A fresh empty directory under the target dir's temp area.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fdsr-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn write_then_read_and_npyz_agrees() {
        let dir = scratch("rw");
        let t = Tensor::new(vec![2, 3, 4], (0..24).map(|i| i as f32 / 7.0).collect()).unwrap();
        let path = dir.join("t.npy");
        write_npy(&path, &t).unwrap();
        assert_eq!(read_npy(&path).unwrap(), t);
        // An independent reader agrees with our writer, and we agree with an independent writer.
        let written = std::fs::read(&path).unwrap();
        let file = npyz::NpyFile::new(&written[..]).unwrap();
        assert_eq!(file.shape(), &[2, 3, 4]);
        assert_eq!(file.into_vec::<f32>().unwrap(), t.data);
        let mut theirs = Vec::new();
        use npyz::WriterBuilder;
        let mut w =
            npyz::WriteOptions::<f32>::new().default_dtype().shape(&[4, 6]).writer(&mut theirs).begin_nd().unwrap();
        w.extend(t.data.iter().copied()).unwrap();
        w.finish().unwrap();
        assert_eq!(Tensor::from_npy_bytes(&theirs).unwrap(), Tensor { shape: vec![4, 6], data: t.data.clone() });
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_errors_name_the_path() {
        let dir = scratch("err");
        let missing = dir.join("missing.npy");
        let e = read_npy(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.npy"), "{e}");
        let junk = dir.join("junk.npy");
        std::fs::write(&junk, b"hello").unwrap();
        let e = read_npy(&junk).unwrap_err().to_string();
        assert!(e.contains("junk.npy") && e.contains("not an .npy file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn failed_atomic_writes_leave_nothing_behind() {
        let dir = scratch("atomic");
        // Destination directory does not exist: error, nothing created.
        assert!(write_atomic(dir.join("no/such/dir/out.fdsr"), b"abc").is_err());
        // Destination is a directory: the rename fails and the temporary file is removed.
        std::fs::create_dir(dir.join("taken")).unwrap();
        let e = write_atomic(dir.join("taken"), b"abc").unwrap_err().to_string();
        assert!(e.contains("taken"), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("taken")]);
        // Replacing an existing file works and leaves only the new content.
        write_atomic(dir.join("out.fdsr"), b"old").unwrap();
        write_atomic(dir.join("out.fdsr"), b"new").unwrap();
        assert_eq!(std::fs::read(dir.join("out.fdsr")).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
