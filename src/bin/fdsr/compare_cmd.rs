//! `fdsr compare`: the same training run with each listed policy, one after the other, and a
//! side-by-side table (accuracy, BitOPs, activation ratio, memory, step time) with the PFQ runs'
//! turning points under it.

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
    /// Train each run with this many seeds (--seed, --seed + 1, …; the data subset stays the
    /// one of --seed) and report the mean and spread of accuracy.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
}

/// `fdsr compare`: the same run with each policy, side by side.
pub fn compare(c: &CompareArgs) -> Result<()> {
    if c.train.resume.is_some() || c.train.checkpoint.is_some() || c.train.metrics.is_some() {
        return Err(FdsrError::InvalidConfig("compare takes no --resume, --checkpoint or --metrics".into()));
    }
    let policies = fdsr::codec::config::split_policies(&c.policies);
    let rows = run_all(&c.train, &policies, c.seeds)?;
    let table = compare_table(&rows) + &crate::pfq_report::turning_points(&rows, run_name);
    print!("{table}");
    if let Some(out) = &c.out {
        fdsr::io::write_atomic(out.with_extension("md"), table.as_bytes())?;
        fdsr::io::write_atomic(out.with_extension("json"), json!(rows).to_string().as_bytes())?;
    }
    Ok(())
}

/// Trains every entry of `policies` with `seeds` seeds each and returns one row per entry (the
/// seeds' mean, see [`crate::aggregate`]). Every entry is checked before any training.
pub(crate) fn run_all(train: &TrainArgs, policies: &[String], seeds: u64) -> Result<Vec<Value>> {
    if seeds == 0 {
        return Err(FdsrError::InvalidConfig("--seeds 0: at least one seed is needed".into()));
    }
    let default_precision = precision_of(&train.precision)?;
    let mut cfgs = Vec::new();
    for entry in policies {
        let mut a = config(train)?;
        let (prec, p) = split_entry(entry)?;
        a.policy = crate::saved_policy(p)?;
        let prec = prec.or_else(|| default_precision.clone());
        crate::pfq_report::check_signal(prec.as_ref(), train.val)?;
        cfgs.push((a, prec));
    }
    let data = load_data(train)?;
    let ctx = crate::gpu_for(config(train)?.compute)?;
    let mut rows = Vec::new();
    for (p, (cfg, prec)) in policies.iter().zip(cfgs) {
        let mut runs = Vec::new();
        for k in 0..seeds {
            eprintln!("training with {p} (seed {})…", cfg.seed + k);
            runs.push(train_run(
                &ctx,
                train,
                fdsr::engine::TrainConfig { seed: cfg.seed + k, ..cfg.clone() },
                prec.clone(),
                &data,
            )?);
        }
        rows.push(crate::aggregate::mean_row(runs));
    }
    Ok(rows)
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

/// A column of the table: its header and the cell of a row (given the base row).
type Column = (&'static str, Box<dyn Fn(&Value, Option<&Value>) -> String>);

/// The table of the runs; columns that no run needs are left out: BitOPs saved without any
/// precision policy, the reuse hit rate without reuse, the gradient error without any probe.
pub(crate) fn compare_table(rows: &[Value]) -> String {
    let base = rows.iter().find(|r| run_name(r) == "none").or(rows.first());
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let any = |p: &dyn Fn(&Value) -> bool| rows.iter().any(p);
    let mut cols: Vec<Column> = vec![
        ("run", Box::new(|r, _| run_name(r))),
        ("test accuracy", Box::new(move |r, _| crate::aggregate::accuracy_cell(r))),
        (
            "Δ vs base",
            Box::new(move |r, b| {
                format!("{:+.2} pt", 100.0 * (f(r, "test_accuracy") - b.map_or(f64::NAN, |b| f(b, "test_accuracy"))))
            }),
        ),
    ];
    if any(&|r| r["precision"].as_str().is_some_and(|p| p != "none")) {
        cols.push((
            "BitOPs saved vs static 8/16",
            Box::new(move |r, _| format!("{:.1}%", 100.0 * f(r, "bitops_saved_vs_static"))),
        ));
    }
    cols.push((
        "activation ratio",
        Box::new(|r, _| format!("{:.2}x", r["saved"]["activation_ratio"].as_f64().unwrap_or(f64::NAN))),
    ));
    cols.push((
        "peak step MiB",
        Box::new(|r, _| format!("{:.1}", r["memory"]["peak_total"].as_f64().unwrap_or(f64::NAN) / (1 << 20) as f64)),
    ));
    cols.push(("step ms", Box::new(move |r, _| format!("{:.0}", f(r, "step_ms")))));
    cols.push((
        "step time ratio",
        Box::new(move |r, b| format!("{:.2}", f(r, "step_ms") / b.map_or(f64::NAN, |b| f(b, "step_ms")))),
    ));
    if any(&|r| r["policy"].as_str().is_some_and(|p| p.contains("reuse"))) {
        cols.push((
            "reuse hit rate",
            Box::new(|r, _| format!("{:.1}%", 100.0 * r["saved"]["reuse_hit_rate"].as_f64().unwrap_or(f64::NAN))),
        ));
    }
    if any(&|r| r["probe_grad_error"].is_number()) {
        cols.push((
            "gradient error",
            Box::new(|r, _| r["probe_grad_error"].as_f64().map_or("–".into(), |e| format!("{e:.3}"))),
        ));
    }
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut t = line(cols.iter().map(|c| c.0.to_string()).collect());
    t += &line(cols.iter().enumerate().map(|(i, _)| if i == 0 { "---".into() } else { "---:".into() }).collect());
    for r in rows {
        t += &line(cols.iter().map(|c| (c.1)(r, base)).collect());
    }
    t
}
