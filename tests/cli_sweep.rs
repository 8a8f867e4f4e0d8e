//! `fdsr compare --seeds`, `fdsr sweep` and `fdsr grad-error` from the command line on a small
//! synthetic data set: seeds average into one row with their spread, a sweep writes its table, JSON
//! and plot, and fewer bits give a larger gradient error at the same weights.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdsr::data::{synthetic, Split};

fn fdsr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdsr")).args(args).output().expect("the fdsr binary runs")
}

/// A data directory with 32 training and 16 test images.
fn data_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-sweep-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    synthetic::images(32, 28, 28, 10, 1).save(&dir, Split::Train).unwrap();
    synthetic::images(16, 28, 28, 10, 2).save(&dir, Split::Test).unwrap();
    dir
}

const RUN: [&str; 9] = ["--model", "tiny", "--epochs", "1", "--batch", "8", "--quiet", "--probe-every", "0"];

#[test]
fn seeds_average_and_a_sweep_writes_its_plot() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("run");
    let (d, out) = (data.to_str().unwrap(), data.join("cmp"));
    let mut a = vec![
        "compare",
        "--data-dir",
        d,
        "--seeds",
        "2",
        "--policies",
        "none,uniform:2",
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(RUN);
    let r = fdsr(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["seeds"], serde_json::json!([0, 1]), "{row}");
        let (acc, all) = (row["test_accuracy"].as_f64().unwrap(), row["test_accuracies"].as_array().unwrap());
        let mean = all.iter().map(|v| v.as_f64().unwrap()).sum::<f64>() / 2.0;
        assert!((acc - mean).abs() < 1e-12 && row["test_accuracy_std"].is_number(), "{row}");
    }
    assert!(std::fs::read_to_string(out.with_extension("md")).unwrap().contains(" ± "));

    let out = data.join("sweep");
    let mut a = vec![
        "sweep",
        "--data-dir",
        d,
        "--uniform",
        "2",
        "--ratios",
        "6",
        "--no-division",
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(RUN);
    let r = fdsr(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let table = std::fs::read_to_string(out.with_extension("md")).unwrap();
    assert!(
        table.contains("uniform:2") && table.contains("fdsr:ratio=6,mask,grad") && table.lines().count() == 5,
        "{table}"
    );
    let svg = std::fs::read_to_string(out.with_extension("svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("fdsr") && svg.contains("uniform"), "{svg}");
    // A ratio the model cannot reach stops the sweep with the reason.
    let mut a = vec!["sweep", "--data-dir", d, "--uniform", "2", "--ratios", "40", "--no-division"];
    a.extend(RUN);
    let r = fdsr(&a);
    let e = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success() && e.contains("largest ratio reachable") && !e.contains("panicked"), "{e}");
}

#[test]
fn fewer_bits_give_a_larger_gradient_error_at_the_same_weights() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("grad");
    let (d, out) = (data.to_str().unwrap(), data.join("grad"));
    let run = ["--model", "tiny", "--epochs", "2", "--batch", "8", "--warmup", "2", "--probes", "2"];
    let mut a =
        vec!["grad-error", "--data-dir", d, "--policies", "uniform:1,uniform:4", "--out", out.to_str().unwrap()];
    a.extend(run);
    let r = fdsr(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    let error = |i: usize| rows[i]["grad_error"].as_f64().unwrap();
    assert_eq!(rows[0]["grad_errors"].as_array().map(Vec::len), Some(2), "{rows:?}");
    assert!(error(0) > 2.0 * error(1) && error(1) > 0.0, "uniform:1 {} against uniform:4 {}", error(0), error(1));
    assert!(rows[0]["activation_ratio"].as_f64().unwrap() > rows[1]["activation_ratio"].as_f64().unwrap());
    // fp32 is the reference, a run too short for the warm-up says so, and a ratio out of reach is
    // refused before the warm-up.
    let far = "uniform:2,fdsr:ratio=30,mask,grad";
    for (policies, warmup, msg) in
        [("none", "2", "reference"), ("uniform:2", "7", "need 9 steps"), (far, "2", "reachable")]
    {
        let mut a = vec!["grad-error", "--data-dir", d, "--policies", policies];
        a.extend(run);
        let i = a.len() - 3;
        a[i] = warmup;
        let r = fdsr(&a);
        let e = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success() && e.contains(msg) && !e.contains("panicked"), "{e}");
        assert!(!e.contains("warming up"), "{e}");
    }
}
