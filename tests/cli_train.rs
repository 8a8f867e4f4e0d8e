//! `fdsr train` from the command line on a small synthetic data set (no network): a run writes
//! metrics, a checkpoint and a JSON summary; bad flags, batches and checkpoints give one clear
//! error and a non-zero exit code, never a panic; precision policies run, compare and log PFQ
//! turning points; `--val` holds out a validation split, and a bad one is refused before any GPU
//! work.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdsr::data::{synthetic, Split};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-train-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fdsr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdsr")).args(args).output().expect("the fdsr binary runs")
}

fn error_of(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "exit code 0; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A data directory with 32 training and 16 test images.
fn data_dir(name: &str) -> PathBuf {
    let dir = scratch(name);
    synthetic::images(32, 28, 28, 10, 1).save(&dir, Split::Train).unwrap();
    synthetic::images(16, 28, 28, 10, 2).save(&dir, Split::Test).unwrap();
    dir
}

#[test]
fn bad_flags_are_named() {
    for (flag, value, says) in [
        ("--model", "vgg", "unknown model"),
        ("--opt", "rmsprop", "unknown optimizer"),
        ("--schedule", "linear", "unknown schedule"),
        ("--dataset", "cifar", "cifar"),
        ("--precision", "fractrain", "precision policy 'fractrain': expected static"),
        ("--precision", "static:fw=1", "outside 2..=16"),
        ("--precision", "fractrain-pfq:window=x", "window='x' is not a number"),
        ("--precision", "fractrain-dfq:fw=8,4;bw=8,8", "ascending"),
    ] {
        let e = error_of(&fdsr(&["train", flag, value]));
        assert!(e.contains(says), "{flag} {value}: {e}");
    }
}

#[test]
fn a_run_writes_metrics_checkpoint_and_summary_and_resumes() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("run");
    let (metrics, ck) = (data.join("m.jsonl"), data.join("ck"));
    let (d, m, c) = (data.to_str().unwrap(), metrics.to_str().unwrap(), ck.to_str().unwrap());
    let base = ["train", "--model", "tiny", "--data-dir", d, "--epochs", "2", "--batch", "8", "--quiet"];
    let base =
        [&base[..], &["--policy", "fdsr:ratio=8,mask,grad,realloc", "--probe-every", "3", "--bn-recalibrate", "2"]]
            .concat();
    let mut args = base.to_vec();
    args.extend(["--metrics", m, "--checkpoint", c, "--log-every", "2", "--layers-every", "4"]);
    let out = fdsr(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The GEMM path (default --compute auto) is said once.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().filter(|l| l.starts_with("compute: ")).count(), 1, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["kind"], "summary");
    assert_eq!((&summary["steps"], &summary["bn_recalibrate"]), (&8.into(), &2.into()));
    assert!(summary["test_accuracy"].as_f64().is_some_and(|a| (0.0..=1.0).contains(&a)));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&metrics).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().filter(|l| l["kind"] == "epoch").count(), 2);
    let step = lines.iter().find(|l| l["kind"] == "step").unwrap();
    assert!(step["memory"]["peak"]["saved_activations"].as_u64().unwrap() > 0);
    // Probes at steps 3 and 6 (1-based), per-tensor records at steps 4 and 8.
    let probes: Vec<_> = lines.iter().filter(|l| l["kind"] == "controller").collect();
    assert_eq!(probes.len(), 2);
    assert!(probes[1]["budgets"]["layer2.bn.input"].as_f64().is_some(), "{}", probes[1]);
    let layers: Vec<_> = lines.iter().filter(|l| l["kind"] == "layers").collect();
    assert_eq!(layers.len(), 2);
    let tensor = |name: &str| layers[1]["tensors"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
    let bn2 = tensor("layer2.bn.input");
    assert_eq!(bn2["bits"].as_array().unwrap().len(), fdsr::rules::config::DEFAULT_BAND_EDGES.len() - 1, "{bn2}");
    // The second conv's input, the first batch norm's fused ReLU output through a max-pool, is
    // recomputed from that batch norm's input, the ReLU's mask and the pool's indices.
    let conv2 = tensor("layer2.conv.input");
    assert_eq!((conv2["form"].as_str(), conv2["reserved_bytes"].as_u64()), (Some("derived"), Some(0)), "{conv2}");
    assert!(layers[1]["tensors"].as_array().unwrap().iter().any(|t| t["form"] == "packed"), "{}", layers[1]);
    assert!(ck.join("checkpoint.safetensors").is_file());

    // The checkpoint holds a finished run: resuming it trains nothing more and says the same.
    let mut resume = base.to_vec();
    resume.extend(["--resume", c]);
    let again = fdsr(&resume);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    // Another model, or a corrupt file, is refused.
    let mut other = resume.clone();
    other[2] = "cnn";
    assert!(error_of(&fdsr(&other)).contains("model tiny"));
    std::fs::write(ck.join("checkpoint.safetensors"), b"not a checkpoint").unwrap();
    error_of(&fdsr(&resume));
}

#[test]
fn batch_larger_than_the_data_is_refused() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("batch");
    let e = error_of(&fdsr(&[
        "train",
        "--model",
        "tiny",
        "--data-dir",
        data.to_str().unwrap(),
        "--batch",
        "64",
        "--quiet",
    ]));
    assert!(e.contains("larger than the 32 training images"), "{e}");
}

#[test]
fn compare_trains_each_policy_side_by_side() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("compare");
    let out = data.join("cmp");
    let (d, o) = (data.to_str().unwrap(), out.to_str().unwrap());
    let args = ["compare", "--model", "tiny", "--data-dir", d, "--epochs", "1", "--batch", "8", "--quiet"];
    let mut a = args.to_vec();
    a.extend([
        "--policies",
        "none,lossless,uniform:2,fdsr:ratio=8,mask,grad,realloc",
        "--out",
        o,
        "--probe-every",
        "2",
    ]);
    let r = fdsr(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let table = std::fs::read_to_string(out.with_extension("md")).unwrap();
    assert_eq!(table.lines().count(), 6, "{table}");
    // Only the columns that apply: no precision policy, no reuse; the probes ran.
    assert!(table.contains("gradient error") && !table.contains("BitOPs") && !table.contains("reuse"), "{table}");
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    assert_eq!(rows[0]["test_accuracy"], rows[1]["test_accuracy"], "lossless equals fp32");
    assert!(rows[2]["saved"]["activation_ratio"].as_f64().unwrap() > 3.0);
    // Lossy policies are probed (the exact run and lossless are not); `,realloc` shares fdsr's budget out.
    assert!(rows[1]["probe_grad_error"].is_null());
    for r in &rows[2..] {
        let e = r["probe_grad_error"].as_f64().unwrap();
        assert!(e > 0.0 && e.is_finite(), "{r}");
    }
    assert!(rows[3]["final_budget"].as_f64().is_some() && rows[2]["final_budget"].is_null());
    let mut bad = args.to_vec();
    bad.extend(["--policies", "none,zip"]);
    assert!(error_of(&fdsr(&bad)).contains("unknown policy"));
}

#[test]
fn compare_includes_precision_policies() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("compare-precision");
    let out = data.join("cmp");
    let (d, o) = (data.to_str().unwrap(), out.to_str().unwrap());
    let args = ["compare", "--model", "tiny", "--data-dir", d, "--epochs", "1", "--batch", "8", "--quiet"];
    let mut a = args.to_vec();
    let runs = "none,static:fw=8,bw=16,fractrain-pfq+uniform:2,dpc:full-ends=0";
    a.extend(["--policies", runs, "--out", o, "--probe-every", "0"]);
    let r = fdsr(&a);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let table = std::fs::read_to_string(out.with_extension("md")).unwrap();
    assert!(table.contains("BitOPs saved") && table.contains("fractrain-pfq:fw=3,4,6,8"), "{table}");
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap()).unwrap();
    let saved: Vec<f64> = rows.iter().map(|r| r["bitops_saved_vs_static"].as_f64().unwrap()).collect();
    assert!(saved[0] < 0.0 && saved[1].abs() < 1e-12 && saved[2] > 0.0 && saved[3] > 0.0, "{saved:?}");
    assert!(rows[2]["saved"]["activation_ratio"].as_f64().unwrap() > 3.0, "pfq combines with uniform:2");
    // Four steps: the final stretch is the last one; the schedules are listed under the table.
    assert_eq!((rows[2]["pfq_stage"].as_u64(), rows[2]["pfq_final_step"].as_u64()), (Some(3), Some(3)));
    assert!(table.contains("PFQ schedules") && table.contains("final stretch from 3 (stage 3)"), "{table}");
    let mut bad = args.to_vec();
    bad.extend(["--policies", "none,dpc:fw=9,99+none"]);
    assert!(error_of(&fdsr(&bad)).contains("outside 2..=16"));
}

#[test]
fn pfq_turning_points_are_logged() {
    if common::gpu().is_none() {
        return;
    }
    let data = data_dir("pfq");
    let metrics = data.join("m.jsonl");
    let (d, m) = (data.to_str().unwrap(), metrics.to_str().unwrap());
    // 8 steps: the final stretch is the last 2, the rule is checked after steps 1 to 5 on the
    // training loss, or on a validation split of 8 of the 32 images (3 steps per epoch then).
    let prec = "fractrain-pfq:window=2;threshold=0.5";
    let args = ["train", "--model", "tiny", "--data-dir", d, "--epochs", "2", "--batch", "8", "--quiet"];
    for (signal, val, steps, checks) in [("train", "0", 8, 5), ("val", "8", 6, 3)] {
        let prec = format!("{prec};signal={signal}");
        let r = fdsr(&[&args[..], &["--precision", &prec, "--val", val, "--metrics", m]].concat());
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let lines: Vec<serde_json::Value> =
            std::fs::read_to_string(&metrics).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let summary = lines.last().unwrap();
        assert_eq!((summary["steps"].as_u64(), summary["pfq_signal"].as_str()), (Some(steps), Some(signal)));
        let checked: Vec<_> = lines.iter().filter(|l| l["kind"] == "pfq_check").map(|l| l["step"].clone()).collect();
        let turns = summary["pfq_turning_points"].as_array().unwrap();
        let start = summary["pfq_final_start"].as_u64().unwrap();
        assert_eq!(start, steps - 2);
        // Checks stop where no turn is left to take (two per turn here, at most `checks`).
        assert!((2..=checks).contains(&checked.len()), "{signal}: {checked:?}");
        assert!(checked.iter().all(|s| s.as_u64().unwrap() < start), "{signal}: {checked:?}");
        let changes: Vec<_> = lines.iter().filter(|l| l["kind"] == "precision").map(|l| l["cause"].clone()).collect();
        assert!(!turns.is_empty(), "{signal}: no turning point in {lines:?}");
        assert_eq!(changes.len(), turns.len() + 1, "{signal}: {changes:?}");
        assert_eq!((changes.last().unwrap().as_str(), summary["pfq_stage"].as_u64()), (Some("final"), Some(3)));
        let last_epoch = lines.iter().rfind(|l| l["kind"] == "epoch").unwrap();
        assert_eq!(last_epoch["val_accuracy"].is_f64(), signal == "val", "{last_epoch}");
        assert!(summary["bitops_saved_vs_static"].as_f64().unwrap() > 0.0);
        assert!(lines.iter().any(|l| l["kind"] == "step" && l["bitops"].as_f64().unwrap() > 0.0));
    }
}

#[test]
fn a_bad_validation_split_is_refused_before_any_gpu_work() {
    let data = data_dir("val");
    let d = data.to_str().unwrap();
    let run = |cmd: &str, extra: &[&str]| {
        let args = [cmd, "--model", "tiny", "--data-dir", d, "--batch", "8", "--quiet"];
        // No adapter matches: an error about the GPU would mean GPU work started first.
        let o = Command::new(env!("CARGO_BIN_EXE_fdsr"))
            .args([&args[..], extra].concat())
            .env("WGPU_ADAPTER_NAME", "no such adapter")
            .output()
            .unwrap();
        error_of(&o)
    };
    for cmd in ["train", "compare"] {
        for n in ["32", "40"] {
            let e = run(cmd, &["--val", n]);
            let says = format!("--val {n}: a validation split of {n} images leaves none of the 32 training images");
            assert!(e.contains(&says), "{cmd} {n}: {e}");
        }
        for bad in ["--val=-1", "--val=ten"] {
            let e = run(cmd, &[bad]);
            assert!(e.contains("invalid value") && e.contains(&bad[6..]) && e.contains("--val"), "{e}");
        }
        let e = run(cmd, &["--precision", "fractrain-pfq:signal=val"]);
        assert!(e.contains("reads a validation split: add --val N"), "{e}");
        let e = run(cmd, &["--precision", "fractrain-pfq:signal=val", "--val", "0"]);
        assert!(e.contains("reads a validation split"), "{e}");
    }
    // 0 is off: the run goes on to look for the GPU.
    assert!(run("train", &["--val", "0"]).contains("no GPU adapter"));
    assert!(run("train", &["--val", "8"]).contains("no GPU adapter"));
}
