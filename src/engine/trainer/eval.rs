//! The trainer's forward-only passes over a data set: evaluation and batch-norm recalibration,
//! sharing one loop over batches.

use super::{record, upload_batch, Metrics, Trainer};
use crate::data::Dataset;
use crate::engine::batch::{make_batch, Normalization};
use crate::engine::layers::Pass;
use crate::engine::ops;
use crate::engine::tensor::Tensor;
use crate::error::Result;
use crate::gpu::{Category, GpuContext};

/// Images `idx` of `data`, normalized with `norm`, in batches of `batch` (no augmentation).
struct Batches<'a> {
    data: &'a Dataset,
    norm: Normalization,
    batch: usize,
    idx: Vec<usize>,
}

impl Trainer {
    /// Recalibrates the batch-norm running statistics ("precise batch norm"): forward passes,
    /// nothing saved, over `batches` batches of `batch` images spread evenly over `data` (all of
    /// it when it has fewer; no augmentation), each batch norm normalizing with its batch
    /// statistics and ending with the image-weighted mean of its batch means and unbiased
    /// variances in place of the running averages training left. Those lag when a layer's
    /// statistics move quickly (short runs; compressed training can widen a channel's
    /// variance a hundredfold within an epoch); evaluation reads what this leaves. Returns the
    /// images used (0 and nothing changed when `batches` is 0). Weights and the step stay as they
    /// are; quantized-compute runs use the next step's bits, as [`Self::evaluate`] does.
    pub async fn recalibrate_bn(
        &mut self,
        ctx: &GpuContext,
        data: &Dataset,
        norm: Normalization,
        batch: usize,
        batches: usize,
    ) -> Result<usize> {
        let n = batches.saturating_mul(batch.max(1)).min(data.len());
        if n == 0 {
            return Ok(0);
        }
        let idx = (0..n).map(|i| i * data.len() / n).collect();
        let mut seen = 0;
        let momentum = |len: usize| {
            seen += len;
            Some(len as f32 / seen as f32)
        };
        let source = Batches { data, norm, batch, idx };
        self.forward_batches(ctx, source, "recalibrate batch norm", momentum, |_, _, _| Ok(())).await?;
        Ok(n)
    }

    /// Loss and accuracy of the model (running batch-norm statistics) on all of `data`.
    pub async fn evaluate(
        &mut self,
        ctx: &GpuContext,
        data: &Dataset,
        norm: Normalization,
        batch: usize,
    ) -> Result<Metrics> {
        let sums = Tensor::from_slice(ctx, &[0.0, 0.0], &[2], Category::Workspace)?;
        let source = Batches { data, norm, batch, idx: (0..data.len()).collect() };
        let each = |enc: &mut wgpu::CommandEncoder, logits: &Tensor, y: &ops::Labels| {
            let out = ops::cross_entropy_forward(ctx, enc, logits, y)?;
            ops::accumulate_metrics(ctx, enc, &out, &sums)
        };
        self.forward_batches(ctx, source, "evaluate", |_| None, each).await?;
        let v = sums.to_vec(ctx).await?;
        let n = data.len().max(1) as f64;
        // Batch mean losses were summed: weight them back by batch size is not needed when every
        // batch is full; the last, shorter batch counts as one batch (documented approximation).
        let batches = data.len().div_ceil(batch.max(1)).max(1) as f64;
        Ok(Metrics { loss: f64::from(v[0]) / batches, accuracy: f64::from(v[1]) / n, images: data.len() as u64 })
    }

    /// The forward of evaluation (nothing saved, at the forward bits of the next training step)
    /// over `source`, one submission per batch: `recalibrate` gives each batch's batch-norm
    /// momentum from its length (`None`: normalize by the running statistics), `each` records
    /// what follows the logits.
    async fn forward_batches(
        &mut self,
        ctx: &GpuContext,
        source: Batches<'_>,
        stage: &str,
        mut recalibrate: impl FnMut(usize) -> Option<f32>,
        mut each: impl FnMut(&mut wgpu::CommandEncoder, &Tensor, &ops::Labels) -> Result<()>,
    ) -> Result<()> {
        let plan = self.precision.plan(self.config.seed as u32, self.step);
        let quant = plan.as_ref();
        for chunk in source.idx.chunks(source.batch.max(1)) {
            let (images, labels) = make_batch(source.data, chunk, source.norm, None)?;
            let (x, y) = upload_batch(ctx, &images, &labels)?;
            let recalibrate = recalibrate(chunk.len());
            let (model, saved) = (&mut self.model, &mut self.saved);
            record(ctx, stage, |enc| {
                let logits = model.forward(&mut Pass { ctx, enc, saved, train: false, quant, recalibrate }, x)?;
                each(enc, &logits, &y)
            })
            .await?;
        }
        Ok(())
    }
}
