//! The `fdsr` binary's contract: round trips, and one-line errors with no partial output files.

mod common;

use fdsr::io::{write_npy, Tensor};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fdsr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdsr")).args(args).output().expect("the fdsr binary runs")
}

/// A fresh, empty directory under cargo's per-target scratch area (not the system's temporary
/// folder, where every run would leave one).
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-contract-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Asserts a failure with one `error:` line naming `needle`, and that `out` was not created.
fn assert_fails(o: &Output, needle: &str, out: &Path) {
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ") && !l.contains("XDG_RUNTIME_DIR")).collect();
    assert!(!o.status.success(), "expected failure, stderr: {err}");
    assert_eq!(lines.len(), 1, "one error line expected, stderr: {err}");
    assert!(lines[0].contains(needle), "error should mention {needle:?}: {}", lines[0]);
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(!out.exists(), "{} must not exist after a failure", out.display());
}

fn activation(shape: Vec<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    let (h, w) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let planes = n / (h * w);
    let img = fdsr::bench::activations::smooth_images(planes, h, w, 9);
    let data = fdsr::bench::activations::conv3x3_relu(&img, planes, h, w, 1, 10);
    Tensor { shape, data }
}

#[test]
fn bad_inputs_give_one_line_errors_and_no_output() {
    let d = scratch("bad");
    let out = d.join("out.fdsr");
    std::fs::write(d.join("text.npy"), b"not an npy file").unwrap();
    assert_fails(&fdsr(&["compress", p(&d.join("text.npy")), "-o", p(&out)]), "npy", &out);
    assert_fails(&fdsr(&["compress", p(&d.join("missing.npy")), "-o", p(&out)]), "missing.npy", &out);
    let mut t = activation(vec![2, 3, 8, 8]);
    t.data[5] = f32::NAN;
    write_npy(d.join("nan.npy"), &t).unwrap();
    assert_fails(&fdsr(&["compress", p(&d.join("nan.npy")), "-o", p(&out)]), "NaN", &out);
    let t = activation(vec![4, 8]);
    write_npy(d.join("ok.npy"), &t).unwrap();
    assert_fails(&fdsr(&["compress", p(&d.join("ok.npy")), "-o", p(&out), "--policy", "uniform:9"]), "uniform", &out);
    assert_fails(
        &fdsr(&["compress", p(&d.join("ok.npy")), "-o", p(&out), "--policy", "division", "--bits", "8,4,3,2"]),
        "fdsr",
        &out,
    );
    std::fs::write(d.join("trunc.fdsr"), b"FDSR\x01").unwrap();
    let npy = d.join("out.npy");
    assert_fails(&fdsr(&["decompress", p(&d.join("trunc.fdsr")), "-o", p(&npy)]), "corrupt", &npy);
}

#[test]
fn compress_inspect_decompress_round_trip() {
    if common::gpu().is_none() {
        return;
    }
    let d = scratch("ok");
    let t = activation(vec![2, 3, 16, 16]);
    write_npy(d.join("a.npy"), &t).unwrap();
    let (c, back) = (d.join("a.fdsr"), d.join("b.npy"));
    for policy in ["fdsr", "uniform:4", "division", "lossless"] {
        let o = fdsr(&["compress", p(&d.join("a.npy")), "-o", p(&c), "--policy", policy, "--seed", "3"]);
        assert!(o.status.success(), "{policy}: {}", String::from_utf8_lossy(&o.stderr));
        let o = fdsr(&["inspect", p(&c), "--reference", p(&d.join("a.npy")), "--json"]);
        assert!(o.status.success(), "{policy}: {}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["shape"], serde_json::json!([2, 3, 16, 16]));
        assert!(j["ratio"].as_f64().unwrap() > 0.99);
        let rel = j["rel_l2_error"].as_f64().unwrap();
        assert!(rel < 0.5, "{policy}: relative error {rel}");
        let o = fdsr(&["decompress", p(&c), "-o", p(&back)]);
        assert!(o.status.success(), "{policy}: {}", String::from_utf8_lossy(&o.stderr));
        let y = fdsr::io::read_npy(&back).unwrap();
        assert_eq!(y.shape, t.shape);
        if policy == "lossless" {
            assert_eq!(y.data, t.data);
        }
    }
    let tiny = d.join("tiny.fdsr");
    assert_fails(&fdsr(&["compress", p(&d.join("a.npy")), "-o", p(&tiny), "--budget", "0.01"]), "budget", &tiny);
}
