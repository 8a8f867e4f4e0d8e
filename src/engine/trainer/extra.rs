//! The trainer's extra passes, each leaving the run as it was: the budget controller's probe (a
//! sub-batch forward and backward with exact and with compressed saved activations) and the
//! step plan (a one-image forward that records what a step saves).

use super::{record, upload_batch, Trainer};
use crate::codec::config::{BitChoice, Policy};
use crate::engine::controller::{Controller, GradPair, PROBE_SHARE};
use crate::engine::layers::Pass;
use crate::engine::model::Model;
use crate::engine::ops::compare;
use crate::engine::precision::QuantPlan;
use crate::engine::saved::SavedActivations;
use crate::engine::tensor::Tensor;
use crate::error::Result;
use crate::gpu::{Category, GpuContext};

/// Records copies of the model's persistent buffers that a training forward changes (batch-norm
/// running statistics, DFQ gate counts): pairs of (buffer, copy).
fn snapshot_state(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    model: &mut Model,
) -> Result<Vec<(Tensor, Tensor)>> {
    let mut kept = Vec::new();
    model.visit(&mut |p| {
        if p.grad.is_none() {
            kept.push(p.value.clone());
        }
    });
    model.gates(&mut |_, slot| {
        if let Some(g) = slot {
            kept.push(g.counts.clone());
        }
    });
    kept.into_iter()
        .map(|t| {
            let c = Tensor::uninit(ctx, t.shape(), Category::Workspace);
            t.copy_to(enc, &c)?;
            Ok((t, c))
        })
        .collect()
}

/// Records putting back what [`snapshot_state`] copied.
fn restore_state(enc: &mut wgpu::CommandEncoder, kept: &[(Tensor, Tensor)]) -> Result<()> {
    kept.iter().try_for_each(|(t, c)| c.copy_to(enc, t))
}

/// The gradient of every weight (`*.weight` parameters, not DFQ gates'), in visiting order.
fn weight_gradients(model: &Model) -> Vec<(String, Tensor)> {
    let mut grads = Vec::new();
    model.visit(&mut |p| {
        if let (true, Some(g)) = (p.name.ends_with(".weight") && !p.name.contains(".gate."), &p.grad) {
            grads.push((p.name.clone(), g.clone()));
        }
    });
    grads
}

/// Records device copies of the weight gradients (the exact pass's, kept for the comparison).
fn keep_gradients(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, model: &Model) -> Result<Vec<(String, Tensor)>> {
    let grads = weight_gradients(model);
    grads
        .into_iter()
        .map(|(name, g)| {
            let kept = Tensor::uninit(ctx, g.shape(), Category::Workspace);
            g.copy_to(enc, &kept)?;
            Ok((name, kept))
        })
        .collect()
}

/// Each weight's gradient error against `exact` (kept by [`keep_gradients`]), summed on the device
/// and read back as a few words per weight in one wait.
async fn compare_gradients(ctx: &GpuContext, model: &Model, exact: &[(String, Tensor)]) -> Result<Vec<GradPair>> {
    let now = weight_gradients(model);
    let counts: Vec<usize> = exact.iter().map(|(_, e)| compare::partials(e.numel())).collect();
    let sums = Tensor::uninit(ctx, &[2 * counts.iter().sum::<usize>()], Category::Workspace);
    record(ctx, "probe compare", |enc| {
        let mut first = 0;
        for (((_, e), (_, c)), n) in exact.iter().zip(&now).zip(&counts) {
            compare::diff_sums(ctx, enc, e, c, &sums, first)?;
            first += n;
        }
        Ok(())
    })
    .await?;
    let words = sums.to_vec(ctx).await?;
    let mut pairs = words.chunks_exact(2);
    let out = exact.iter().zip(&counts).map(|((name, _), &n)| {
        let (diff2, norm2) =
            pairs.by_ref().take(n).fold((0.0, 0.0), |(d, e), w| (d + f64::from(w[0]), e + f64::from(w[1])));
        GradPair { name: name.clone(), diff2, norm2 }
    });
    Ok(out.collect())
}

impl Trainer {
    /// A probe of `images` and `labels` without a training step (after the step plan where this
    /// batch size has none); it counts as a step for the rounding seed and the controller, so the
    /// next call probes afresh. Nothing trains; the weights stay as they are.
    pub async fn probe_only(&mut self, ctx: &GpuContext, images: &[f32], labels: &[u8]) -> Result<()> {
        let plan = self.step_quant(ctx, images, labels.len()).await?;
        self.probe(ctx, images, labels, plan.as_ref()).await?;
        self.step += 1;
        Ok(())
    }

    /// Makes the step plan for batches like `images` (`n` images), so that a budget the steps
    /// cannot meet is an error now, naming what takes the room, rather than at the first step.
    pub async fn check_plan(&mut self, ctx: &GpuContext, images: &[f32], n: usize) -> Result<()> {
        self.step_quant(ctx, images, n).await.map(|_| ())
    }

    /// This step's quantized-compute plan, after making the step plan ([`Self::make_plan`]) where
    /// a batch of `n` images has none yet.
    pub(super) async fn step_quant(&mut self, ctx: &GpuContext, images: &[f32], n: usize) -> Result<Option<QuantPlan>> {
        let quant = self.precision.plan(self.config.seed as u32, self.step);
        if self.plan.as_ref().is_none_or(|p| p.0 != n) {
            self.make_plan(ctx, images, n, quant.as_ref()).await?;
        }
        Ok(quant)
    }

    /// The controller's gradient-error probe: the first `ControllerConfig::share`th of the batch goes
    /// forward and backward twice, with exact and with compressed saved activations (the same
    /// tensors compressed as in a whole batch); the two sets of weight gradients are compared on
    /// the device, and the errors (two words per 4,096 values) are read back and go to the
    /// controller with the compressed pass's records; its budgets then apply from this step on.
    /// The records are read from the device only where the controller reallocates (one more
    /// wait); a measuring probe takes their names as the host knows them. The host waits do not
    /// grow with the number of weights. Batch-norm running statistics and gate counts
    /// are put back afterwards, and the step's own backward overwrites every gradient, so the
    /// probe leaves the training run as it was; holding a sub-batch, it never needs more memory
    /// than the step itself.
    pub(super) async fn probe(
        &mut self,
        ctx: &GpuContext,
        images: &[f32],
        labels: &[u8],
        quant: Option<&QuantPlan>,
    ) -> Result<()> {
        let model = &mut self.model;
        let kept = record(ctx, "probe snapshot", |enc| snapshot_state(ctx, enc, model)).await?;
        let (_, store, pairs) = self.exact_then_compressed(ctx, images, labels, quant).await?;
        let records = if self.controller.as_ref().is_some_and(Controller::reallocates) {
            store.read_records(ctx).await?
        } else {
            store.known_records()
        };
        record(ctx, "probe restore", |enc| restore_state(enc, &kept)).await?;
        let average = self.plan.as_ref().map_or(0.0, |p| p.1.average);
        if let Some(c) = self.controller.as_mut() {
            c.update(self.step, &pairs, &records, average);
            self.saved.set_budgets(c.budgets().clone());
        }
        Ok(())
    }

    /// The probe's forward and backward of its share of the batch (weight gradients in the
    /// gradient buffers), with exact saved activations (`seed` `None`) or compressed as in a
    /// whole batch with that rounding seed; returns the store.
    async fn probe_pass(
        &mut self,
        ctx: &GpuContext,
        images: &[f32],
        labels: &[u8],
        quant: Option<&QuantPlan>,
        seed: Option<u32>,
    ) -> Result<SavedActivations> {
        let share = self.controller.as_ref().map_or(PROBE_SHARE, |c| c.config.share);
        let n = labels.len().div_ceil(share).max(1);
        let per = images.len() / labels.len().max(1);
        let mut store = match seed {
            None => SavedActivations::new(),
            Some(_) => {
                let mut s = SavedActivations::like(&self.saved)?;
                s.set_batch_share(labels.len(), n);
                s
            }
        };
        store.begin_step(seed.unwrap_or(0));
        let (x, y) = upload_batch(ctx, &images[..n * per], &labels[..n])?;
        self.pass(ctx, x, &y, &mut store, quant, false).await?;
        Ok(store)
    }

    /// The probe's exact pass, its weight gradients kept, then its compressed pass with the
    /// step's rounding seed, compared with them: the kept exact gradients, the compressed pass's
    /// store and each weight's error (one wait).
    async fn exact_then_compressed(
        &mut self,
        ctx: &GpuContext,
        images: &[f32],
        labels: &[u8],
        quant: Option<&QuantPlan>,
    ) -> Result<(Vec<(String, Tensor)>, SavedActivations, Vec<GradPair>)> {
        let seed = self.step_seed();
        self.probe_pass(ctx, images, labels, quant, None).await?;
        let exact = record(ctx, "probe keep", |enc| keep_gradients(ctx, enc, &self.model)).await?;
        let store = self.probe_pass(ctx, images, labels, quant, Some(seed)).await?;
        let pairs = compare_gradients(ctx, &self.model, &exact).await?;
        Ok((exact, store, pairs))
    }

    /// How much of the probe's gradient error is bias and how much rounding noise, on `images`
    /// and `labels` with the budgets as they are (nothing trains, the controller is not told):
    /// the compressed pass runs twice with two rounding seeds. Per weight, its gradient error
    /// with the first seed and with the second against the exact gradient, and the second
    /// against the first (`norm2` there is the exact gradient's too). Unbiased rounding makes
    /// the two errors' mean square `bias² + noise²` and the difference's `2·noise²`.
    pub async fn probe_spread(
        &mut self,
        ctx: &GpuContext,
        images: &[f32],
        labels: &[u8],
    ) -> Result<Vec<[GradPair; 3]>> {
        let quant = self.step_quant(ctx, images, labels.len()).await?;
        let model = &mut self.model;
        let kept = record(ctx, "probe snapshot", |enc| snapshot_state(ctx, enc, model)).await?;
        let (exact, _, first) = self.exact_then_compressed(ctx, images, labels, quant.as_ref()).await?;
        let first_grads = record(ctx, "probe keep", |enc| keep_gradients(ctx, enc, &self.model)).await?;
        let seed = self.step_seed() ^ 0x5bd1_e995;
        self.probe_pass(ctx, images, labels, quant.as_ref(), Some(seed)).await?;
        let second = compare_gradients(ctx, &self.model, &exact).await?;
        let between = compare_gradients(ctx, &self.model, &first_grads).await?;
        record(ctx, "probe restore", |enc| restore_state(enc, &kept)).await?;
        Ok(first
            .into_iter()
            .zip(second)
            .zip(between)
            .map(|((a, b), d)| {
                let norm2 = a.norm2;
                [a, b, GradPair { norm2, ..d }]
            })
            .collect())
    }

    /// The step plan under an `fdsr` budget (None for other policies): what a one-image forward
    /// saves, scaled to `batch`, shared out so that the step stays under the budget
    /// ([`super::saved::plan`]). Batch-norm state is put back afterwards.
    pub(super) async fn make_plan(
        &mut self,
        ctx: &GpuContext,
        images: &[f32],
        batch: usize,
        quant: Option<&QuantPlan>,
    ) -> Result<()> {
        let Some(Policy::Fdsr(cfg)) = self.saved.policy().cloned() else { return Ok(()) };
        let BitChoice::Budget(budget) = cfg.bits else { return Ok(()) };
        let per = images.len() / batch.max(1);
        let model = &mut self.model;
        let kept = record(ctx, "plan snapshot", |enc| snapshot_state(ctx, enc, model)).await?;
        let mut h = Tensor::from_slice(
            ctx,
            &images[..per],
            &[1, 1, crate::engine::model::INPUT_SIDE, crate::engine::model::INPUT_SIDE],
            Category::Workspace,
        )?;
        let mut rec = SavedActivations::recorder();
        for i in 0..self.model.layer_count() {
            let model = &mut self.model;
            h = record(ctx, "plan", |enc| model.forward_layer(i, &mut Pass::training(ctx, enc, &mut rec, quant), h))
                .await?;
        }
        record(ctx, "plan restore", |enc| restore_state(enc, &kept)).await?;
        let label = Policy::Fdsr(cfg).to_string();
        let p =
            crate::engine::saved::plan::plan(&rec.take_plan_items(), batch, budget, ctx.max_binding_bytes(), &label)?;
        self.saved.set_plan_budgets(p.budgets.clone());
        self.plan = Some((batch, p));
        Ok(())
    }
}
