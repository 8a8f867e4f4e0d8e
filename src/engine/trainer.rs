//! The trainer: one training step (forward, loss, backward, update) recorded into one command
//! encoder and submitted at once, loss and accuracy summed on the device and read back only when
//! asked (evaluation and batch-norm recalibration in `eval`).

use std::collections::HashMap;

mod eval;
mod extra;

use super::controller::{Controller, ControllerConfig};
use super::gate::Gate;
use super::layers::Pass;
use super::model::{Model, ModelName};
use super::ops;
use super::optim::{OptConfig, Optimizer, Schedule};
use super::precision::{Precision, PrecisionRun, QuantPlan};
use super::saved::SavedActivations;
use super::tensor::Tensor;
use crate::codec::config::Policy;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, Compute, ComputePath, GpuContext};

/// What a run trains and how.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainConfig {
    /// Architecture.
    pub model: ModelName,
    /// Epochs.
    pub epochs: usize,
    /// Images per step.
    pub batch: usize,
    /// Base learning rate.
    pub lr: f32,
    /// Learning-rate schedule.
    pub schedule: Schedule,
    /// Optimizer.
    pub opt: OptConfig,
    /// Seed of initialization, shuffling and augmentation.
    pub seed: u64,
    /// Random shifts and flips of training images.
    pub augment: bool,
    /// How saved activations are stored: `None` keeps fp32, else the codec policy.
    pub policy: Option<Policy>,
    /// How conv and linear layers multiply: `Fp32` sets the context's GEMMs to fp32 when the
    /// trainer is made; under `Auto` and `Coop` they take the path `engine::gemm::select_compute`
    /// chose for the context (fp32 unless it was called and chose cooperative matrices).
    pub compute: Compute,
}

/// Records `f` into a new encoder and submits it, inside error scopes named `stage`.
async fn record<T>(ctx: &GpuContext, stage: &str, f: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<T>) -> Result<T> {
    ctx.scoped(stage, || {
        let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("fdsr step") });
        let out = f(&mut enc)?;
        ctx.submit(enc);
        Ok(out)
    })
    .await?
}

/// Uploads a batch of `[n, 1, 32, 32]` images and their labels. Uploads go ahead of every
/// recorded pass, so this runs only between submits, never while recording.
fn upload_batch(ctx: &GpuContext, images: &[f32], labels: &[u8]) -> Result<(Tensor, ops::Labels)> {
    let side = super::model::INPUT_SIDE;
    let x = Tensor::from_slice(ctx, images, &[labels.len(), 1, side, side], Category::Workspace)?;
    Ok((x, ops::upload_labels(ctx, labels)))
}

/// Mean loss and accuracy over the steps since the last read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metrics {
    /// Mean cross-entropy.
    pub loss: f64,
    /// Fraction of correct predictions.
    pub accuracy: f64,
    /// Images counted.
    pub images: u64,
}

/// A model with its optimizer, saved-activation store and on-device metric sums.
pub struct Trainer {
    /// The run's configuration.
    pub config: TrainConfig,
    /// The model.
    pub model: Model,
    /// The optimizer and its state.
    pub opt: Optimizer,
    /// Saved activations between forward and backward.
    pub saved: SavedActivations,
    /// The budget controller (`fdsr` under a budget), probing every few steps.
    pub controller: Option<Controller>,
    /// The precision policy of conv and linear compute and its BitOPs count.
    pub precision: PrecisionRun,
    /// The step plan under an `fdsr` budget, with the batch it was made for.
    pub plan: Option<(usize, super::saved::Plan)>,
    /// Training steps taken (global, across epochs).
    pub step: u64,
    /// Loss and correct predictions summed on the device since the last read, over these
    /// images and steps (a checkpoint carries them).
    pub(crate) sums: Tensor,
    pub(crate) summed_images: u64,
    pub(crate) summed_steps: u64,
}

impl Trainer {
    /// A fresh model and optimizer for `config`.
    pub fn new(ctx: &GpuContext, config: TrainConfig) -> Result<Trainer> {
        if config.batch == 0 || config.epochs == 0 || !(config.lr.is_finite() && config.lr > 0.0) {
            return Err(FdsrError::InvalidConfig(format!(
                "batch {} and epochs {} must be positive and the learning rate {} positive and finite",
                config.batch, config.epochs, config.lr
            )));
        }
        if config.compute == Compute::Fp32 {
            ctx.set_compute_path(ComputePath::Fp32)?;
        }
        let mut model = Model::new(ctx, config.model, config.seed)?;
        let opt = Optimizer::new(ctx, &mut model, config.opt)?;
        let sums = Tensor::from_slice(ctx, &[0.0, 0.0], &[2], Category::Workspace)?;
        let saved = SavedActivations::with_policy(config.policy.clone())?;
        let controller = Controller::for_policy(config.policy.as_ref(), ControllerConfig::default())?;
        let precision = PrecisionRun::new(config.model, None, 0);
        Ok(Trainer {
            config,
            model,
            opt,
            saved,
            controller,
            precision,
            plan: None,
            step: 0,
            sums,
            summed_images: 0,
            summed_steps: 0,
        })
    }

    /// Replaces the budget controller's configuration (`None` turns it off); only an `fdsr`
    /// policy under a budget has one.
    pub fn set_controller(&mut self, config: Option<ControllerConfig>) -> Result<()> {
        self.controller = match config {
            Some(c) => Controller::for_policy(self.config.policy.as_ref(), c)?,
            None => None,
        };
        self.saved.set_budgets(Default::default());
        Ok(())
    }

    /// Sets the precision policy of conv and linear compute (`None`: fp32) for a run of `total`
    /// steps, restarting its schedule and BitOPs count, installing DFQ's gates (fresh) where the
    /// policy has them and restarting the optimizer; call before the first step (or before
    /// restoring a checkpoint). [`super::Session::set_precision`] knows `total`.
    pub fn set_precision(&mut self, ctx: &GpuContext, policy: Option<Precision>, total: u64) -> Result<()> {
        let run = PrecisionRun::new(self.config.model, policy, total);
        let options = match &run.policy {
            Some(Precision::Dfq { dfq, .. }) => dfq.fw.len(),
            _ => 0,
        };
        let gated: HashMap<String, usize> = run.gated_layers().map(|l| (l.name.clone(), l.inputs)).collect();
        let mut result = Ok(());
        self.model.gates(&mut |name, slot| {
            *slot = match (gated.get(name), &result) {
                (Some(&channels), Ok(())) => Gate::new(ctx, name, channels, options).map_err(|e| result = Err(e)).ok(),
                _ => None,
            };
        });
        result?;
        self.opt = Optimizer::new(ctx, &mut self.model, self.config.opt)?;
        self.precision = run;
        Ok(())
    }

    /// Adds the inputs DFQ's gates sent to each option since the last call to the BitOPs count
    /// (waiting for the GPU); nothing without gates.
    pub async fn count_gates(&mut self, ctx: &GpuContext) -> Result<()> {
        let mut counts = Vec::new();
        self.model.gates(&mut |name, slot| {
            if let Some(g) = slot {
                counts.push((name.to_string(), g.counts.clone()));
            }
        });
        for (name, t) in counts {
            let words: Vec<f32> = t.to_vec(ctx).await?.iter().map(|v| v.to_bits() as f32).collect();
            t.write(ctx, &vec![0.0; words.len()])?;
            self.precision.add_gate_counts(&name, &words)?;
        }
        Ok(())
    }

    /// Learning rate of the next step, given `steps_per_epoch`.
    pub fn lr(&self, steps_per_epoch: u64) -> f32 {
        let total = steps_per_epoch * self.config.epochs as u64;
        let epoch = (self.step / steps_per_epoch.max(1)) as usize;
        self.config.schedule.lr(self.config.lr, self.step, total, epoch)
    }

    /// Runs one training step on `images` (`[n, 1, 32, 32]` values) and `labels`: uploads, then
    /// records into one command encoder, submitted once, per top-level layer its forward (each
    /// saved tensor's encoding right after the op that saved it), the loss, per layer in reverse
    /// the decoding of what it saved and its backward, and the update. Nothing is read back and
    /// the host never waits. On the controller's probe steps a probe runs first
    /// (`Trainer::probe`).
    pub async fn step(&mut self, ctx: &GpuContext, images: &[f32], labels: &[u8], lr: f32) -> Result<()> {
        let n = labels.len();
        let plan = self.step_quant(ctx, images, n).await?;
        let quant = plan.as_ref();
        if self.controller.as_ref().is_some_and(|c| c.due(self.step)) {
            self.probe(ctx, images, labels, quant).await?;
        }
        let (x, y) = upload_batch(ctx, images, labels)?;
        self.model.check_input(&x)?;
        let mut saved = std::mem::take(&mut self.saved);
        saved.begin_step(self.step_seed());
        let result = record(ctx, "training step", |enc| {
            self.record_pass(ctx, enc, x, &y, &mut saved, quant, true)?;
            self.opt.step(ctx, enc, &mut self.model, lr)
        })
        .await;
        saved.clear();
        self.saved = saved;
        result?;
        self.precision.count_step(n);
        self.step += 1;
        self.summed_images += n as u64;
        self.summed_steps += 1;
        Ok(())
    }

    /// The stochastic-rounding seed of this step's stored activations.
    fn step_seed(&self) -> u32 {
        (self.config.seed as u32) ^ (self.step as u32).wrapping_mul(0x9e37_79b9)
    }

    /// One forward and backward of `x` in one submit, as [`Self::record_pass`].
    async fn pass(
        &mut self,
        ctx: &GpuContext,
        x: Tensor,
        y: &ops::Labels,
        store: &mut SavedActivations,
        quant: Option<&QuantPlan>,
        count: bool,
    ) -> Result<()> {
        record(ctx, "pass", |enc| self.record_pass(ctx, enc, x, y, store, quant, count)).await
    }

    /// Records one forward and backward of `x` into `enc` with `store` keeping what the layers
    /// save (gradients in the parameters' gradient buffers); loss and accuracy go to the metric
    /// sums when `count`.
    #[allow(clippy::too_many_arguments)]
    fn record_pass(
        &mut self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        x: Tensor,
        y: &ops::Labels,
        store: &mut SavedActivations,
        quant: Option<&QuantPlan>,
        count: bool,
    ) -> Result<()> {
        let layers = self.model.layer_count();
        let mut h = x;
        for i in 0..layers {
            h = self.model.forward_layer(i, &mut Pass::training(ctx, enc, store, quant), h)?;
        }
        let out = ops::cross_entropy_forward(ctx, enc, &h, y)?;
        if count {
            ops::accumulate_metrics(ctx, enc, &out, &self.sums)?;
        }
        let mut d = ops::cross_entropy_backward(ctx, enc, &out.probs, y)?;
        for i in (0..layers).rev() {
            match self.model.backward_layer(i, &mut Pass::training(ctx, enc, store, quant), d)? {
                Some(g) => d = g,
                None => break,
            }
        }
        Ok(())
    }

    /// Reads the summed loss and accuracy since the last read (waiting for the GPU), and resets
    /// them; brings the BitOPs count up to date ([`Self::count_gates`]) and hands the loss to
    /// PFQ's plateau rule. A loss that is not finite is an error naming the step.
    pub async fn read_metrics(&mut self, ctx: &GpuContext) -> Result<Metrics> {
        self.count_gates(ctx).await?;
        let v = self.sums.to_vec(ctx).await?;
        let images = std::mem::take(&mut self.summed_images);
        let steps = std::mem::take(&mut self.summed_steps);
        self.sums.write(ctx, &[0.0, 0.0])?;
        // The sums hold each step's mean loss and its count of correct predictions.
        let m = Metrics {
            loss: f64::from(v[0]) / steps.max(1) as f64,
            accuracy: f64::from(v[1]) / images.max(1) as f64,
            images,
        };
        if !m.loss.is_finite() {
            return Err(FdsrError::InvalidTensor(format!(
                "the training loss became {} by step {}: lower the learning rate",
                m.loss, self.step
            )));
        }
        self.precision.add_train_loss(f64::from(v[0]), steps);
        Ok(m)
    }
}
