//! The `fdsr` command line on every kind of `.npy` input: what `tests/cli_contract.rs` does not
//! cover. Rejected inputs (float64, empty, truncated, Fortran order, rank 0 and 5, infinities)
//! give one `error:` line naming the problem, a non-zero exit code, no panic, and neither an output
//! file nor a temporary one; accepted ones (float16, big-endian, ranks 1 to 4, non-finite values
//! with `--allow-nonfinite`) round-trip. GPU round trips skip without an adapter unless
//! `REQUIRE_GPU=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdsr::io::{read_npy, write_npy, Tensor};

/// A fresh, empty directory under cargo's per-target scratch area.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fdsr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdsr")).args(args).output().expect("the fdsr binary runs")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

fn ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Asserts the failure contract for `out` and returns the error line.
fn fails(o: &Output, output_file: &Path) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "exit code 0; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The GPU stack may print its own `error: XDG_RUNTIME_DIR …` line; it is not fdsr's.
    let errors: Vec<&str> =
        stderr.lines().filter(|l| l.starts_with("error: ") && !l.contains("XDG_RUNTIME_DIR")).collect();
    assert_eq!(errors.len(), 1, "one error line expected: {stderr}");
    assert!(!output_file.exists(), "{} exists after a failure", output_file.display());
    let dir = output_file.parent().expect("output in a folder");
    let temps: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(temps.is_empty(), "temporary files left behind: {temps:?}");
    errors[0].to_string()
}

/// The bytes of an `.npy` 1.0 file with this header dict and these data bytes.
fn npy_bytes(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

fn raw_npy(path: &Path, dict: &str, data: &[u8]) {
    std::fs::write(path, npy_bytes(dict, data)).unwrap();
}

fn dict(descr: &str, fortran: bool, shape: &str) -> String {
    let order = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}")
}

#[test]
fn rejected_inputs_name_the_problem() {
    let dir = scratch("rejected");
    let out = dir.join("out.fdsr");
    let full = fdsr::data::synthetic::activation(&[1, 2, 8, 8], 3).unwrap().to_npy_bytes();
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("f64", npy_bytes(&dict("<f8", false, "(2,)"), &[0; 16]), "float64"),
        ("i32", npy_bytes(&dict("<i4", false, "(2,)"), &[0; 8]), "int32"),
        ("empty", npy_bytes(&dict("<f4", false, "(0, 3)"), &[]), "empty tensor"),
        ("trunc", full[..full.len() - 6].to_vec(), "truncated"),
        ("fortran", npy_bytes(&dict("<f4", true, "(2, 2)"), &[0; 16]), "Fortran"),
        ("scalar", npy_bytes(&dict("<f4", false, "()"), &[0; 4]), "rank 0"),
        ("rank5", npy_bytes(&dict("<f4", false, "(1, 1, 1, 1, 2)"), &[0; 8]), "rank 5"),
    ];
    for (name, bytes, needle) in cases {
        let input = dir.join(format!("{name}.npy"));
        std::fs::write(&input, bytes).unwrap();
        let line = fails(&fdsr(&["compress", p(&input), "-o", p(&out)]), &out);
        assert!(line.contains(needle) && line.contains(&format!("{name}.npy")), "{name}: {line}");
    }
    let mut t = fdsr::data::synthetic::activation(&[2, 40], 1).unwrap();
    t.data[47] = f32::NEG_INFINITY;
    write_npy(dir.join("inf.npy"), &t).unwrap();
    let line = fails(&fdsr(&["compress", p(&dir.join("inf.npy")), "-o", p(&out)]), &out);
    assert!(line.contains("-inf at index 47 [1, 7]"), "{line}");
}

#[test]
fn unreadable_compressed_files_are_errors() {
    let dir = scratch("unreadable");
    let npy = dir.join("out.npy");
    let line = fails(&fdsr(&["decompress", p(&dir.join("missing.fdsr")), "-o", p(&npy)]), &npy);
    assert!(line.contains("missing.fdsr"), "{line}");
    std::fs::write(dir.join("junk.fdsr"), b"\x93NUMPY this is not an fdsr file").unwrap();
    fails(&fdsr(&["decompress", p(&dir.join("junk.fdsr")), "-o", p(&npy)]), &npy);
    let o = fdsr(&["inspect", p(&dir.join("junk.fdsr"))]);
    assert!(!o.status.success() && !String::from_utf8_lossy(&o.stderr).contains("panicked"));
}

#[test]
fn float16_big_endian_and_every_rank_round_trip() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("accepted");
    let (packed, back) = (dir.join("x.fdsr"), dir.join("y.npy"));
    // float16 input: values exactly representable in f16 come back bit for bit through lossless.
    let halves: Vec<f32> = (0..2 * 3 * 8 * 8).map(|i| ((i % 37) as f32 - 12.0) * 0.25).collect();
    let f16_bytes: Vec<u8> = halves.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
    raw_npy(&dir.join("h.npy"), &dict("<f2", false, "(2, 3, 8, 8)"), &f16_bytes);
    // big-endian float32 input, rank 2.
    let be: Vec<f32> = (0..5 * 9).map(|i| i as f32 * 0.5 - 3.0).collect();
    let be_bytes: Vec<u8> = be.iter().flat_map(|v| v.to_be_bytes()).collect();
    raw_npy(&dir.join("be.npy"), &dict(">f4", false, "(5, 9)"), &be_bytes);
    let mut inputs = vec![("h.npy".to_string(), vec![2, 3, 8, 8], halves), ("be.npy".to_string(), vec![5, 9], be)];
    for shape in [vec![300], vec![3, 7, 11], vec![1, 1, 9, 13]] {
        let t = fdsr::data::synthetic::activation(&shape, 5).unwrap();
        let name = format!("r{}.npy", shape.len());
        write_npy(dir.join(&name), &t).unwrap();
        inputs.push((name, shape, t.data));
    }
    for (name, shape, values) in &inputs {
        for policy in ["lossless", "uniform:4", "fdsr"] {
            // Fixed bits: the default fdsr budget is below what small tensors' metadata needs.
            let bits: &[&str] = if policy == "fdsr" { &["--bits", "8,4,3,2"] } else { &[] };
            let input = dir.join(name);
            let args = [&["compress", p(&input), "-o", p(&packed), "--policy", policy][..], bits].concat();
            ok(&fdsr(&args), name);
            ok(&fdsr(&["decompress", p(&packed), "-o", p(&back)]), name);
            let y = read_npy(&back).unwrap();
            assert_eq!(&y.shape, shape, "{name} {policy}");
            if policy == "lossless" {
                assert_eq!(&y.data, values, "{name}");
            }
        }
    }
}

#[test]
fn allow_nonfinite_keeps_lossless_bits_and_zeroes_lossy_ones() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("nonfinite");
    let mut t = Tensor::new(vec![2, 64], (0..128).map(|i| i as f32 / 16.0).collect()).unwrap();
    t.data[3] = f32::NAN;
    t.data[100] = f32::INFINITY;
    let (packed, back) = (dir.join("n.fdsr"), dir.join("m.npy"));
    let input = dir.join("n.npy");
    write_npy(&input, &t).unwrap();
    let args = ["compress", p(&input), "-o", p(&packed), "--allow-nonfinite", "--policy"];
    ok(&fdsr(&[&args[..], &["lossless"]].concat()), "lossless");
    ok(&fdsr(&["decompress", p(&packed), "-o", p(&back)]), "lossless");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&read_npy(&back).unwrap().data), bits(&t.data));
    ok(&fdsr(&[&args[..], &["uniform:8"]].concat()), "uniform");
    ok(&fdsr(&["decompress", p(&packed), "-o", p(&back)]), "uniform");
    assert!(read_npy(&back).unwrap().data.iter().all(|v| v.is_finite()));
}

#[test]
fn data_fetch_rejects_unknown_data_sets_and_dir_with_all() {
    let o = fdsr(&["data", "fetch", "--dataset", "cifar"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("\"cifar\"") && e.contains("fashion-mnist, mnist"), "{e}");
    let o = fdsr(&["data", "fetch", "--dir", "somewhere"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("--dir needs a single --dataset"), "{e}");
    assert!(!Path::new("somewhere").exists());
}

#[test]
fn reuse_from_the_policy_string_or_the_flag_shows_in_inspect() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("reuse");
    let shape = [2, 4, 16, 16];
    let (x, _) = common::with_duplicates(shape, 20, 80, 0.0);
    let mut t = fdsr::data::synthetic::activation(&shape, 1).unwrap();
    t.data = x;
    write_npy(dir.join("dup.npy"), &t).unwrap();
    let input = dir.join("dup.npy");
    for (i, args) in
        [vec!["--policy", "fdsr:bits=8,4,3,2,reuse"], vec!["--bits", "8,4,3,2", "--reuse"]].into_iter().enumerate()
    {
        let out = dir.join(format!("dup{i}.fdsr"));
        let mut a = vec!["compress", p(&input), "-o", p(&out)];
        a.extend(args);
        ok(&fdsr(&a), "compress with reuse");
        let o = fdsr(&["inspect", p(&out), "--json"]);
        ok(&o, "inspect");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["tile_classes"]["reference"].as_u64().unwrap() > 0, "{v}");
        assert!(v["reuse_hit_rate"].as_f64().unwrap() > 0.0, "{v}");
        let back = dir.join(format!("dup{i}.npy"));
        ok(&fdsr(&["decompress", p(&out), "-o", p(&back)]), "decompress");
        assert_eq!(read_npy(&back).unwrap().shape, shape.to_vec());
    }
    let out = dir.join("bad.fdsr");
    let line = fails(&fdsr(&["compress", p(&input), "-o", p(&out), "--policy", "uniform:2", "--reuse"]), &out);
    assert!(line.contains("--reuse"), "{line}");
}
