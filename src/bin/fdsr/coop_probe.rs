//! The cooperative-matrix self-check in a child process first, so that a driver that crashes
//! compiling or running the tensor-core kernels (Mesa 26.2's lavapipe does at 512-bit vectors)
//! costs `--compute auto` the tensor cores, not the run.
//!
//! Where the adapter offers a configuration the kernel can use, the command runs itself as
//! `fdsr coop-probe` (hidden), which makes its own device and runs the self-check alone. Where
//! that process dies (a signal, a panic), `auto` takes fp32 and says why, and `coop` is an
//! error; where it finishes, the command selects its path as always (the self-check then runs
//! a second time, in this process: about a second on a GPU). Adapters without cooperative
//! matrices (Debian 12's lavapipe, browsers) start no process.

use std::process::{Command, ExitCode, ExitStatus, Stdio};

use fdsr::engine::gemm::{select_compute, ComputeReport};
use fdsr::gpu::{Compute, ComputePath};
use fdsr::{FdsrError, GpuContext, Result};

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "coop-probe";

/// The probe's exit code when the self-check ran and failed cleanly (an error, not a crash).
const CLEAN_FAILURE: u8 = 2;

/// The hidden subcommand: a device with cooperative matrices requested and the self-check of
/// `--compute coop`; exit 0 when it passes, [`CLEAN_FAILURE`] when it fails with an error.
pub fn run() -> ExitCode {
    let checked = pollster::block_on(async {
        let ctx = GpuContext::new().await?;
        select_compute(&ctx, Compute::Coop).await
    });
    match checked {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{e}");
            ExitCode::from(CLEAN_FAILURE)
        }
    }
}

/// Why a probe that ended with `status` counts as a crash, or `None` where it finished (passed,
/// or failed with an error that the command's own selection reports again).
pub fn crash(status: ExitStatus) -> Option<String> {
    if status.success() || status.code() == Some(i32::from(CLEAN_FAILURE)) {
        return None;
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return Some(format!("killed by signal {signal}"));
    }
    Some(match status.code() {
        Some(code) => format!("exit code {code}"),
        None => "no exit code".to_string(),
    })
}

/// Runs the probe process; `Some(why)` where it crashed (the last line it wrote to stderr
/// included).
fn probe() -> std::io::Result<Option<String>> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).arg(SUBCOMMAND).stdin(Stdio::null()).output()?;
    Ok(crash(out.status).map(|why| {
        let text = String::from_utf8_lossy(&out.stderr);
        match text.lines().rfind(|l| !l.trim().is_empty()) {
            Some(last) => format!("{why}; its last words: {last}"),
            None => why,
        }
    }))
}

/// Why a probe process crashed where `ctx` could take cooperative matrices under `compute`;
/// `None` where no probe was needed or it finished.
fn probe_crash(ctx: &GpuContext, compute: Compute) -> Option<String> {
    if compute == Compute::Fp32 || ctx.coop_path().is_err() {
        return None;
    }
    probe().unwrap_or_else(|e| {
        eprintln!("warning: the cooperative-matrix probe process did not start ({e}); self-checking in this one");
        None
    })
}

/// [`select_compute`] for `compute` on `ctx`, after a probe process where `ctx` could take
/// cooperative matrices: where that crashed, fp32 under `auto` (the report says why) and an
/// error under `coop`.
pub fn select(ctx: &GpuContext, compute: Compute) -> Result<ComputeReport> {
    let Some(why) = probe_crash(ctx, compute) else { return pollster::block_on(select_compute(ctx, compute)) };
    let why = format!("cooperative matrices crashed a probe process running their self-check ({why})");
    if compute == Compute::Coop {
        let message = format!("--compute coop on {}: {why}", ctx.adapter_description());
        return Err(FdsrError::Gpu { stage: "compute path".into(), message });
    }
    ctx.set_compute_path(ComputePath::Fp32)?;
    Ok(ComputeReport { asked: compute, path: ComputePath::Fp32, note: Some(why), self_check_failed: true })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn crashes_are_signals_and_unexpected_codes() {
        // Wait statuses as the OS reports them: exit code c is c << 8, a signal is its number.
        assert_eq!(crash(ExitStatus::from_raw(0)), None, "passed");
        assert_eq!(crash(ExitStatus::from_raw(2 << 8)), None, "failed with an error");
        assert_eq!(crash(ExitStatus::from_raw(11)).as_deref(), Some("killed by signal 11"));
        assert_eq!(crash(ExitStatus::from_raw(6)).as_deref(), Some("killed by signal 6"));
        assert_eq!(crash(ExitStatus::from_raw(101 << 8)).as_deref(), Some("exit code 101"), "a panic");
        assert_eq!(crash(ExitStatus::from_raw(1 << 8)).as_deref(), Some("exit code 1"));
    }
}
