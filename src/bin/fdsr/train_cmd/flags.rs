//! Checks of `fdsr train`'s (and `fdsr compare`'s) numeric flags, each naming the flag and its
//! value, before any data or GPU work; and the default probe cadence.

use super::TrainArgs;
use fdsr::{FdsrError, Result};

/// The first flag whose value cannot work, as an error that names it and says what it must be.
pub(super) fn check(a: &TrainArgs) -> Result<()> {
    let bad = |flag: &str, value: &dyn std::fmt::Display, need: &str| {
        Err(FdsrError::InvalidConfig(format!("--{flag} {value}: {need}")))
    };
    let counts = [
        ("epochs", Some(a.epochs)),
        ("batch", Some(a.batch)),
        ("limit-train", a.limit_train),
        ("limit-test", a.limit_test),
    ];
    for (flag, value) in counts {
        if value == Some(0) {
            return bad(flag, &0, "must be at least 1");
        }
    }
    if let Some(lr) = a.lr.filter(|v| !(v.is_finite() && *v > 0.0)) {
        return bad("lr", &lr, "the learning rate must be a positive finite number");
    }
    if let Some(wd) = a.wd.filter(|v| !(v.is_finite() && *v >= 0.0)) {
        return bad("wd", &wd, "the weight decay must be a finite number ≥ 0");
    }
    if !(0.0..1.0).contains(&a.momentum) {
        return bad("momentum", &a.momentum, "the momentum must be in [0, 1)");
    }
    Ok(())
}

/// Steps between gradient-error probes: `--probe-every`, or by default a quarter of the run's
/// steps, at least 1 and at most 50 — so that a short run (the quick start's 16 steps: every 4)
/// probes and lets the controller act, and a long one probes every 50 steps.
pub(super) fn probe_every(a: &TrainArgs, total_steps: u64) -> u64 {
    a.probe_every.unwrap_or((total_steps / 4).clamp(1, 50))
}
