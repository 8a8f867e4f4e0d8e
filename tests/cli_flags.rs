//! The command line refuses bad numbers before any data or GPU work, naming the flag and its
//! value; a NaN input names the file and `--allow-nonfinite`; the data folder is the user's one
//! wherever the command runs; Mesa's `XDG_RUNTIME_DIR` complaint never reaches the user.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdsr::io::Tensor;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-flags-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `fdsr ARGS` run in `cwd` with no data set, no npm (empty PATH) and no usable adapter: whatever
/// reached for data or the GPU would fail with another message than the one a test expects.
fn fdsr_isolated(cwd: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdsr"));
    cmd.args(args).current_dir(cwd).env("PATH", "").env("WGPU_ADAPTER_NAME", "no-such-adapter");
    for var in ["FDSR_DATA", "XDG_DATA_HOME"] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the fdsr binary runs")
}

fn error_of(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "exit code 0; stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.starts_with("error:")).count(), 1, "{stderr}");
    stderr
}

#[test]
fn bad_numbers_are_named_before_data_or_gpu_work() {
    let dir = scratch("numbers");
    for cmd in ["train", "compare"] {
        for (flag, says) in [
            (&["--epochs", "0"][..], "--epochs 0: must be at least 1"),
            (&["--batch", "0"], "--batch 0: must be at least 1"),
            (&["--lr=-1"], "--lr -1: the learning rate must be a positive finite number"),
            (&["--lr", "NaN"], "--lr NaN"),
            (&["--wd=-0.5"], "--wd -0.5"),
            (&["--momentum", "1"], "--momentum 1: the momentum must be in [0, 1)"),
            (&["--limit-train", "0"], "--limit-train 0"),
            (&["--limit-test", "0"], "--limit-test 0"),
            (&["--compute", "f16"], "--compute \"f16\": expected fp32, auto or coop"),
        ] {
            let e = error_of(&fdsr_isolated(&dir, &[], &[&[cmd, "--model", "tiny"], flag].concat()));
            assert!(e.contains(says), "{cmd} {flag:?}: {e}");
            assert!(!e.contains("adapter") && !e.contains("npm"), "{cmd} {flag:?} reached for data or GPU: {e}");
        }
    }
}

#[test]
fn a_nan_input_names_the_file_and_the_flag() {
    let dir = scratch("nan");
    let input = dir.join("x.npy");
    let mut data = vec![0.5f32; 16];
    data[5] = f32::NAN;
    std::fs::write(&input, Tensor::new(vec![4, 4], data).unwrap().to_npy_bytes()).unwrap();
    let out = dir.join("x.fdsr");
    let e = error_of(&fdsr_isolated(&dir, &[], &["compress", input.to_str().unwrap(), "-o", out.to_str().unwrap()]));
    assert!(e.contains(input.to_str().unwrap()) && e.contains("1 NaN/Inf values"), "{e}");
    assert!(e.contains("index 5 [1, 1]") && e.contains("--allow-nonfinite"), "{e}");
    assert!(!out.exists());
}

/// Broken IDX files where the data home says the data set lives: the error names that path,
/// whatever the working directory, so the files were looked for there (and nothing was fetched).
#[test]
fn the_data_folder_is_the_users_wherever_the_command_runs() {
    let root = scratch("home");
    let elsewhere = root.join("somewhere/else");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let plant = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        for f in ["train-images.idx", "train-labels.idx", "test-images.idx", "test-labels.idx"] {
            std::fs::write(dir.join(f), b"not an idx file").unwrap();
        }
    };
    let (home, xdg, own) = (root.join("h"), root.join("xdg"), root.join("own"));
    let cases: [(&[(&str, &Path)], PathBuf); 3] = [
        (&[("HOME", &home)], home.join(".local/share/fdsr/mnist")),
        (&[("HOME", &home), ("XDG_DATA_HOME", &xdg)], xdg.join("fdsr/mnist")),
        (&[("HOME", &home), ("XDG_DATA_HOME", &xdg), ("FDSR_DATA", &own)], own.join("mnist")),
    ];
    for (env, expect) in cases {
        plant(&expect);
        for cwd in [&root, &elsewhere] {
            let e = error_of(&fdsr_isolated(cwd, env, &["train", "--model", "tiny", "--dataset", "mnist"]));
            assert!(e.contains(expect.join("train-images.idx").to_str().unwrap()), "{expect:?} from {cwd:?}: {e}");
        }
        std::fs::remove_dir_all(&expect).unwrap();
    }
    // --data-dir still wins.
    let given = root.join("given");
    plant(&given);
    let e = error_of(&fdsr_isolated(&root, &[("FDSR_DATA", &own)], &["train", "--data-dir", given.to_str().unwrap()]));
    assert!(e.contains(given.join("train-images.idx").to_str().unwrap()), "{e}");
}

#[test]
fn mesa_runtime_dir_noise_never_reaches_the_user() {
    if common::gpu().is_none() {
        return;
    }
    let dir = scratch("xdg");
    let input = dir.join("x.npy");
    let data: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
    std::fs::write(&input, Tensor::new(vec![1, 1, 16, 16], data).unwrap().to_npy_bytes()).unwrap();
    let (out, tmp) = (dir.join("x.fdsr"), dir.join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    for runtime_dir in [None, Some(dir.join("missing"))] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdsr"));
        cmd.args(["compress", input.to_str().unwrap(), "-o", out.to_str().unwrap(), "--policy", "uniform:4"]);
        cmd.env("TMPDIR", &tmp);
        match &runtime_dir {
            None => cmd.env_remove("XDG_RUNTIME_DIR"),
            Some(d) => cmd.env("XDG_RUNTIME_DIR", d),
        };
        let o = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        assert!(!stderr.contains("XDG_RUNTIME_DIR") && !stderr.contains("error"), "{runtime_dir:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the private runtime folders are removed");
}
