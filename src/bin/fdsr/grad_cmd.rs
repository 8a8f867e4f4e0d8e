//! `fdsr grad-error`: every policy's weight-gradient error at the same weights and batches — fp32
//! training up to a step, then the controller's probe under each policy with the weights held —
//! a comparison at equal stored bytes without the seed noise of short accuracy runs.

use std::path::PathBuf;

use clap::Args;
use fdsr::engine::controller::{ControllerConfig, GradPair};
use fdsr::engine::session::Session;
use fdsr::engine::{TrainConfig, Trainer};
use fdsr::gpu::GpuContext;
use fdsr::{FdsrError, Result};
use indicatif::ProgressBar;
use serde_json::{json, Value};

use crate::train_cmd::{config, load_data, TrainArgs};

#[derive(Args)]
pub struct GradArgs {
    #[command(flatten)]
    train: TrainArgs,
    /// Steps of fp32 training (the run's recipe: --lr, --schedule over --epochs) before measuring.
    #[arg(long, default_value_t = 64)]
    warmup: u64,
    /// Probes per policy, one per batch, on the batches that follow the warm-up (the same for
    /// every policy); the weights do not change between them.
    #[arg(long, default_value_t = 8)]
    probes: u64,
    /// The probe runs on the first ⌈batch / share⌉ images of each batch: 8 as in training runs
    /// (the controller's), 1 for the error of a whole batch's gradient (its rounding noise
    /// averages over 8× more images than the controller's probe sees; a bias does not).
    #[arg(long, default_value_t = fdsr::engine::controller::PROBE_SHARE)]
    probe_share: usize,
    /// After each probe, run the compressed pass twice more on its batch with two rounding seeds
    /// and split the gradient error into bias (what averaging over steps keeps) and rounding
    /// noise (what it averages away): two more columns.
    #[arg(long)]
    spread: bool,
    /// Lossy saved-activation policies to measure, in order.
    #[arg(long, default_value = "uniform:2,fdsr:ratio=11,mask,grad")]
    policies: String,
    /// Also write the table to OUT.md and the rows to OUT.json.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `fdsr grad-error`.
pub fn run(g: &GradArgs) -> Result<()> {
    if g.probes == 0 {
        return Err(FdsrError::InvalidConfig("--probes 0: at least one probe is needed".into()));
    }
    let base = TrainConfig { policy: None, ..config(&g.train)? };
    let policies = fdsr::codec::config::split_policies(&g.policies);
    let mut cfgs = Vec::new();
    for p in &policies {
        let policy = crate::saved_policy(p)?;
        let probing = fdsr::engine::controller::Controller::for_policy(policy.as_ref(), ControllerConfig::default())?;
        if probing.is_none() {
            return Err(FdsrError::InvalidConfig(format!(
                "{p} is exact: its gradients are the reference the others are measured against"
            )));
        }
        cfgs.push(TrainConfig { policy, ..base.clone() });
    }
    let model = base.model.to_string();
    let data = load_data(&g.train)?;
    let ctx = crate::gpu_for(base.compute)?;
    let mut warm = Session::new(Trainer::new(&ctx, base)?, data.train.clone())?;
    if g.warmup + g.probes > warm.total_steps() {
        return Err(FdsrError::InvalidConfig(format!(
            "--warmup {} and --probes {} need {} steps; the run has {} (raise --epochs or --limit-train)",
            g.warmup,
            g.probes,
            g.warmup + g.probes,
            warm.total_steps()
        )));
    }
    // Each policy's step plan before the warm-up: a ratio the model cannot reach is refused now.
    for cfg in &cfgs {
        let mut s = Session::new(Trainer::new(&ctx, cfg.clone())?, data.train.clone())?;
        let (x, y) = s.next_batch()?;
        pollster::block_on(s.trainer.check_plan(&ctx, &x, y.len()))?;
    }
    eprintln!("warming up: {} fp32 steps of {model}…", g.warmup);
    let bar = ProgressBar::new(g.warmup);
    for _ in 0..g.warmup {
        pollster::block_on(warm.step(&ctx))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let weights = pollster::block_on(read_weights(&ctx, &warm.trainer))?;
    let mut rows = Vec::new();
    for (name, cfg) in policies.iter().zip(cfgs) {
        eprintln!("probing {name}…");
        rows.push(pollster::block_on(probe_policy(&ctx, g, name, cfg, &weights, &data.train))?);
    }
    let table = markdown(&model, g, &rows);
    print!("{table}");
    if let Some(out) = &g.out {
        fdsr::io::write_atomic(out.with_extension("md"), table.as_bytes())?;
        fdsr::io::write_atomic(out.with_extension("json"), json!(rows).to_string().as_bytes())?;
    }
    Ok(())
}

/// Every parameter's values, by name.
async fn read_weights(ctx: &GpuContext, t: &Trainer) -> Result<Vec<(String, Vec<f32>)>> {
    let mut params = Vec::new();
    t.model.visit(&mut |p| params.push((p.name.clone(), p.value.clone())));
    let mut out = Vec::new();
    for (name, v) in params {
        out.push((name, v.to_vec(ctx).await?));
    }
    Ok(out)
}

/// `--probes` probes of one policy at `weights`, one per batch (after each the controller shares
/// the bytes out as in a run); the last comes with a step at learning rate 0 for the stored bytes.
/// The weights stay as they are.
async fn probe_policy(
    ctx: &GpuContext,
    g: &GradArgs,
    name: &str,
    cfg: TrainConfig,
    weights: &[(String, Vec<f32>)],
    train: &fdsr::data::Dataset,
) -> Result<Value> {
    let mut s = Session::new(Trainer::new(ctx, cfg)?, train.clone())?;
    s.trainer.set_controller(Some(ControllerConfig {
        every: 1,
        share: g.probe_share,
        ..ControllerConfig::default()
    }))?;
    let mut params = Vec::new();
    s.trainer.model.visit(&mut |p| params.push((p.name.clone(), p.value.clone())));
    for (name, value) in params {
        let w = weights.iter().find(|(n, _)| *n == name).map(|(_, w)| w);
        value.write(ctx, w.ok_or_else(|| FdsrError::InvalidConfig(format!("no warm-up weights for {name}")))?)?;
    }
    s.trainer.step = g.warmup;
    let (mut errors, mut per_weight): (Vec<f64>, Vec<(String, Vec<f64>)>) = (Vec::new(), Vec::new());
    let mut budgets = serde_json::Map::new();
    let mut spread = Vec::new();
    for k in 0..g.probes {
        let (x, y) = s.next_batch()?;
        if k + 1 < g.probes {
            s.trainer.probe_only(ctx, &x, &y).await?;
        } else {
            // The last probe comes with a step (at learning rate 0), whose stored bytes give the ratio.
            s.trainer.step(ctx, &x, &y, 0.0).await?;
        }
        if g.spread {
            spread.push(bias_noise(&s.trainer.probe_spread(ctx, &x, &y).await?));
        }
        let decisions = s.trainer.controller.as_mut().map(|c| c.take_decisions()).unwrap_or_default();
        for d in decisions {
            errors.push(d.grad_error);
            budgets = d.budgets.into_iter().map(|(t, b)| (t, json!(b))).collect();
            for (w, e) in d.per_weight {
                match per_weight.iter_mut().find(|(n, _)| *n == w) {
                    Some((_, v)) => v.push(e),
                    None => per_weight.push((w, vec![e])),
                }
            }
        }
    }
    let stats = s.trainer.saved.take_stats(ctx).await?;
    let (mean, sd) = mean_sd(&errors);
    let weights: serde_json::Map<String, Value> =
        per_weight.into_iter().map(|(w, v)| (w, json!(mean_sd(&v).0))).collect();
    let mut row = json!({ "policy": name, "activation_ratio": stats.ratio(), "grad_error": mean, "grad_error_std": sd,
        "grad_errors": errors, "weight_errors": weights, "budgets": budgets });
    if g.spread {
        let (bias, noise): (Vec<f64>, Vec<f64>) = spread.into_iter().unzip();
        row["bias"] = json!(mean_sd(&bias).0);
        row["noise"] = json!(mean_sd(&noise).0);
    }
    Ok(row)
}

/// One probe's bias and noise from [`Trainer::probe_spread`]'s pairs: per weight the relative
/// `bias² = (e₁² + e₂²)/2 − d²/2` (at least 0) and `noise² = d²/2`, each as an rms over the
/// weights the policy perturbs, like the gradient error.
fn bias_noise(pairs: &[[GradPair; 3]]) -> (f64, f64) {
    let perturbed: Vec<(f64, f64)> = pairs
        .iter()
        .filter(|[a, _, _]| a.diff2 > 0.0 && a.norm2 > 0.0)
        .map(|[a, b, d]| {
            let noise2 = d.diff2 / 2.0;
            (((a.diff2 + b.diff2) / 2.0 - noise2).max(0.0) / a.norm2, noise2 / a.norm2)
        })
        .collect();
    let n = perturbed.len().max(1) as f64;
    let rms = |f: fn(&(f64, f64)) -> f64| (perturbed.iter().map(f).sum::<f64>() / n).sqrt();
    (rms(|p| p.0), rms(|p| p.1))
}

/// Mean and sample standard deviation (0 for one value).
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// The table: ratio, the probes' gradient error, and each weight's mean relative error.
fn markdown(model: &str, g: &GradArgs, rows: &[Value]) -> String {
    // The weights some policy perturbs (a layer whose input is kept exact has none).
    let weights: Vec<String> = rows
        .first()
        .and_then(|r| r["weight_errors"].as_object())
        .map(|m| {
            m.keys()
                .filter(|w| rows.iter().any(|r| r["weight_errors"][w.as_str()].as_f64() > Some(0.0)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut s = format!(
        "Weight-gradient error against fp32 saved activations: {} model after {} fp32 steps, {} probes per policy on 1/{} of each batch (rms over the weights whose input is stored; relative error per weight)\n\n",
        model, g.warmup, g.probes, g.probe_share
    );
    let spread = rows.iter().any(|r| r.get("bias").is_some());
    let (head, rule) = if spread { (" bias | noise |", "---:|---:|") } else { ("", "") };
    s += &format!("| policy | activation ratio | gradient error |{head} {} |\n", weights.join(" | "));
    s += &format!("|---|---:|---:|{rule}{}\n", "---:|".repeat(weights.len()));
    for r in rows {
        let cells: Vec<String> =
            weights.iter().map(|w| r["weight_errors"][w].as_f64().map_or("–".into(), |e| format!("{e:.3}"))).collect();
        let split: String = if spread {
            ["bias", "noise"].iter().map(|k| r[*k].as_f64().map_or(" – |".into(), |v| format!(" {v:.3} |"))).collect()
        } else {
            String::new()
        };
        s += &format!(
            "| `{}` | {:.2}x | {:.3} ± {:.3} |{split} {} |\n",
            r["policy"].as_str().unwrap_or("?"),
            r["activation_ratio"].as_f64().unwrap_or(0.0),
            r["grad_error"].as_f64().unwrap_or(0.0),
            r["grad_error_std"].as_f64().unwrap_or(0.0),
            cells.join(" | ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(diff2: f64, norm2: f64) -> GradPair {
        GradPair { name: "w".into(), diff2, norm2 }
    }

    #[test]
    fn bias_and_noise_split_the_error_and_skip_unperturbed_weights() {
        // e₁² = e₂² = 4, d² = 2 over ‖g‖² = 1: noise² = 1, bias² = 4 − 1 = 3.
        let split = [pair(4.0, 1.0), pair(4.0, 1.0), pair(2.0, 1.0)];
        let exact = [pair(0.0, 9.0), pair(0.0, 9.0), pair(0.0, 9.0)];
        let (bias, noise) = bias_noise(&[split.clone(), exact]);
        assert!((bias - 3f64.sqrt()).abs() < 1e-12 && (noise - 1.0).abs() < 1e-12, "{bias} {noise}");
        // Pure noise: the errors' mean square is all noise, and bias is 0, never negative.
        let (bias, noise) = bias_noise(&[[pair(1.0, 4.0), pair(0.8, 4.0), pair(2.2, 4.0)]]);
        assert_eq!(bias, 0.0);
        assert!((noise - (1.1f64 / 4.0).sqrt()).abs() < 1e-12, "{noise}");
    }
}
