//! `fdsr compare`: the same training run with each listed policy, one after the other, and a
//! side-by-side table (accuracy, BitOPs, activation ratio, memory, step time).

use std::path::PathBuf;

use clap::Args;
use fdsr::engine::precision::policy::split_entry;
use fdsr::{FdsrError, Result};
use serde_json::{json, Value};

use crate::train_cmd::{config, load_data, precision_of, train_run, TrainArgs};

#[derive(Args)]
pub struct CompareArgs {
    #[command(flatten)]
    train: TrainArgs,
    /// Runs to train, in order: saved-activation policies, precision policies, or both joined by
    /// `+` (`dpc+fdsr:budget=2,mask`); an entry without a precision policy takes --precision.
    /// Deltas are against the run with neither (`none`) when it is listed.
    #[arg(long, default_value = "none,fdsr")]
    policies: String,
    /// Also write the table to OUT.md and the summaries to OUT.json.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `fdsr compare`: the same run with each policy, side by side.
pub fn compare(c: &CompareArgs) -> Result<()> {
    if c.train.resume.is_some() || c.train.checkpoint.is_some() || c.train.metrics.is_some() {
        return Err(FdsrError::InvalidConfig("compare takes no --resume, --checkpoint or --metrics".into()));
    }
    let policies = fdsr::codec::config::split_policies(&c.policies);
    let default_precision = precision_of(&c.train.precision)?;
    let mut cfgs = Vec::new();
    for entry in &policies {
        let mut a = config(&c.train)?;
        let (prec, p) = split_entry(entry)?;
        a.policy = if p == "none" { None } else { Some(p.parse()?) };
        cfgs.push((a, prec.or_else(|| default_precision.clone())));
    }
    let data = load_data(&c.train)?;
    let ctx = crate::gpu()?;
    let mut rows = Vec::new();
    for (p, (cfg, prec)) in policies.iter().zip(cfgs) {
        eprintln!("training with {p}…");
        rows.push(train_run(&ctx, &c.train, cfg, prec, &data)?);
    }
    let table = compare_table(&rows);
    print!("{table}");
    if let Some(out) = &c.out {
        fdsr::io::write_atomic(out.with_extension("md"), table.as_bytes())?;
        fdsr::io::write_atomic(out.with_extension("json"), json!(rows).to_string().as_bytes())?;
    }
    Ok(())
}

/// The row label: the precision policy (if any) `+` the saved-activation policy.
fn run_name(r: &Value) -> String {
    let (prec, policy) = (r["precision"].as_str().unwrap_or("none"), r["policy"].as_str().unwrap_or("?"));
    if prec == "none" {
        policy.to_string()
    } else {
        format!("{prec}+{policy}")
    }
}

fn compare_table(rows: &[Value]) -> String {
    let base = rows.iter().find(|r| run_name(r) == "none").or(rows.first());
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let mut t = String::from("| run | test accuracy | Δ vs base | BitOPs saved vs static 8/16 | activation ratio | peak step MiB | step ms | step time ratio | reuse hit rate | gradient error |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let (acc, ms) = (f(r, "test_accuracy"), f(r, "step_ms"));
        let (bacc, bms) = base.map_or((f64::NAN, f64::NAN), |b| (f(b, "test_accuracy"), f(b, "step_ms")));
        let peak = r["memory"]["peak_total"].as_f64().unwrap_or(f64::NAN) / (1 << 20) as f64;
        let ratio = r["saved"]["activation_ratio"].as_f64().unwrap_or(f64::NAN);
        let hits = 100.0 * r["saved"]["reuse_hit_rate"].as_f64().unwrap_or(f64::NAN);
        let probe = r["probe_grad_error"].as_f64().map_or("–".to_string(), |e| format!("{e:.3}"));
        let bitops = 100.0 * f(r, "bitops_saved_vs_static");
        t += &format!(
            "| {} | {:.4} | {:+.2} pt | {bitops:.1}% | {ratio:.2}x | {peak:.1} | {ms:.0} | {:.2} | {hits:.1}% | {probe} |\n",
            run_name(r),
            acc,
            100.0 * (acc - bacc),
            ms / bms
        );
    }
    t
}
