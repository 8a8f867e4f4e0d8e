//! PFQ in the CLI: `signal=val` checked against `--val` before any GPU work, each check of the
//! plateau rule and each stage change as metrics lines (stage changes also printed), the
//! schedule in a run's summary, and the turning points of each run under `fdsr compare`'s table.

use fdsr::engine::precision::{Check, Precision, PrecisionRun, Signal};
use fdsr::{FdsrError, Result};
use serde_json::{json, Value};

/// A PFQ policy with `signal=val` needs a validation split (`--val N`).
pub fn check_signal(p: Option<&Precision>, val: usize) -> Result<()> {
    match p {
        Some(Precision::Pfq { pfq, .. }) if pfq.signal == Signal::Val && val == 0 => {
            Err(FdsrError::InvalidConfig(format!(
                "precision policy '{}' reads a validation split: add --val N to hold out N training images",
                p.map_or(String::new(), Precision::to_string)
            )))
        }
        _ => Ok(()),
    }
}

/// What happened to PFQ's schedule after step `step`: a check of the plateau rule (`check`) and
/// a stage change by the rule or the final stretch. Each as an optional line to print and a
/// metrics record (`kind: "pfq_check"` for a check, `kind: "precision"` for a stage change).
pub fn events(r: &PrecisionRun, step: u64, check: Option<&Check>) -> Vec<(Option<String>, Value)> {
    let Some(p) = &r.pfq else { return Vec::new() };
    let bits = r.bits();
    let mut out = Vec::new();
    let signal = r.signal().map(|s| s.to_string());
    if let Some(c) = check {
        out.push((
            None,
            json!({ "kind": "pfq_check", "step": step, "signal": signal, "loss": c.loss,
            "change": c.change, "threshold": c.threshold, "turned": c.turned, "pfq_stage": p.stage }),
        ));
        if c.turned {
            let change = c.change.unwrap_or(f64::NAN);
            let line = format!(
                "step {step}: PFQ turning point ({} loss {:.4}, change {:.2}% < {:.2}%), stage {}, bits {bits:?}",
                signal.as_deref().unwrap_or("?"),
                c.loss,
                100.0 * change,
                100.0 * c.threshold,
                p.stage
            );
            out.push((
                Some(line),
                json!({ "kind": "precision", "cause": "plateau", "step": step, "loss": c.loss,
                "signal": signal, "pfq_stage": p.stage, "bits": bits }),
            ));
        }
    }
    if p.final_step == Some(step) {
        let line = format!("step {step}: PFQ final stretch, stage {} to the end, bits {bits:?}", p.stage);
        out.push((
            Some(line),
            json!({ "kind": "precision", "cause": "final", "step": step, "pfq_stage": p.stage,
            "bits": bits }),
        ));
    }
    out
}

/// Adds PFQ's schedule to a run's summary: the stage at the end, the steps after which the rule
/// turned and the final stretch began, the signal and the cadence (all null without PFQ).
pub fn summarize(r: &PrecisionRun, summary: &mut Value) {
    let p = r.pfq.as_ref();
    let fields = [
        ("pfq_stage", json!(p.map(|p| p.stage))),
        ("pfq_turning_points", json!(p.map(|p| p.turning_points.clone()))),
        ("pfq_final_step", json!(p.and_then(|p| p.final_step))),
        ("pfq_signal", json!(r.signal().map(|s| s.to_string()))),
        ("pfq_check_every", json!(p.map(|p| p.cadence.every))),
        ("pfq_final_start", json!(p.map(|p| p.cadence.final_start))),
    ];
    for (k, v) in fields {
        summary[k] = v;
    }
}

/// Lines under the compare table: for each PFQ run (each seed of a row of several), the steps
/// after which its stage rose (by the plateau rule, then by the final stretch) and its cadence;
/// empty without PFQ runs.
pub fn turning_points(rows: &[Value], name: impl Fn(&Value) -> String) -> String {
    let mut out = String::new();
    for row in rows.iter().filter(|r| r["pfq_signal"].is_string()) {
        let runs: Vec<&Value> = row["runs"].as_array().map_or(vec![row], |rs| rs.iter().collect());
        for r in &runs {
            let seed = if runs.len() > 1 { format!(" (seed {})", r["seed"]) } else { String::new() };
            let turns = r["pfq_turning_points"].as_array().into_iter().flatten().enumerate();
            let turns: Vec<String> = turns.map(|(i, t)| format!("{t} (stage {})", i + 1)).collect();
            let turns = if turns.is_empty() { "none".to_string() } else { turns.join(", ") };
            let last = &r["pfq_stage"];
            let fin = match r["pfq_final_step"].as_u64() {
                Some(f) => format!("final stretch from {f} (stage {last})"),
                None => format!("no final stretch (stage {last} at the end)"),
            };
            out += &format!(
                "- {}{seed}: turning points at {turns}; {fin}; of {} steps, {} loss checked every {} steps before step {}\n",
                name(row),
                r["steps"],
                r["pfq_signal"].as_str().unwrap_or("?"),
                r["pfq_check_every"],
                r["pfq_final_start"]
            );
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\nPFQ schedules (steps taken when the stage rose):\n{out}")
}
