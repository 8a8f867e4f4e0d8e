//! `fdsr sweep`: the ratio–accuracy frontier. The same run with fp32 activations, `uniform:B`
//! for each `B`, `division`, and `fdsr:ratio=R` for each `R`, each with `--seeds` seeds; a table
//! and the runs' JSON, and an SVG plot of test accuracy against the activation ratio measured in
//! each run (fp32 bytes / bytes held, masks counted).

use std::path::PathBuf;

use clap::Args;
use fdsr::Result;
use serde_json::{json, Value};

use crate::compare_cmd::{compare_table, run_all};
use crate::plot::Series;
use crate::train_cmd::TrainArgs;

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    train: TrainArgs,
    /// Bits of the `uniform:B` runs (empty: none).
    #[arg(long, default_value = "1,2,3,4", value_delimiter = ',')]
    uniform: Vec<u8>,
    /// Ratios of the `fdsr:ratio=R` runs.
    #[arg(long, default_value = "8,12,16,24,32", value_delimiter = ',')]
    ratios: Vec<f64>,
    /// Flags of the `fdsr` runs (`mask,grad`: mask-aware, gradient-aware).
    #[arg(long, default_value = "mask,grad")]
    fdsr_flags: String,
    /// Leave out the `division` run.
    #[arg(long)]
    no_division: bool,
    /// Seeds per run.
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Writes OUT.md, OUT.json and OUT.svg.
    #[arg(long, default_value = "sweep")]
    out: PathBuf,
}

/// The runs of a sweep, in order.
fn entries(a: &SweepArgs) -> Vec<String> {
    let flags = if a.fdsr_flags.is_empty() { String::new() } else { format!(",{}", a.fdsr_flags) };
    let mut v = vec!["none".to_string()];
    v.extend(a.uniform.iter().map(|b| format!("uniform:{b}")));
    if !a.no_division {
        v.push("division".into());
    }
    v.extend(a.ratios.iter().map(|r| format!("fdsr:ratio={r}{flags}")));
    v
}

/// `fdsr sweep`.
pub fn sweep(a: &SweepArgs) -> Result<()> {
    let runs = entries(a);
    // Every entry parses before any training.
    for p in runs.iter().filter(|p| *p != "none") {
        p.parse::<fdsr::Policy>()?;
    }
    let rows = run_all(&a.train, &runs, a.seeds)?;
    let table = compare_table(&rows);
    print!("{table}");
    fdsr::io::write_atomic(a.out.with_extension("md"), table.as_bytes())?;
    fdsr::io::write_atomic(a.out.with_extension("json"), json!(rows).to_string().as_bytes())?;
    fdsr::io::write_atomic(a.out.with_extension("svg"), crate::plot::frontier(&series(&rows))?.as_bytes())?;
    eprintln!("wrote {}.md, .json and .svg", a.out.display());
    Ok(())
}

/// The rows as named series of (activation ratio, accuracy, accuracy spread) points.
fn series(rows: &[Value]) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let policy = r["policy"].as_str().unwrap_or("?");
        let family = policy.split([':', ',']).next().unwrap_or(policy).to_string();
        let point = (
            r["saved"]["activation_ratio"].as_f64().unwrap_or(f64::NAN),
            r["test_accuracy"].as_f64().unwrap_or(f64::NAN),
            r["test_accuracy_std"].as_f64().unwrap_or(0.0),
        );
        match out.iter_mut().find(|s| s.0 == family) {
            Some(s) => s.1.push(point),
            None => out.push((family, vec![point])),
        }
    }
    for s in &mut out {
        s.1.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}
