//! A training run over a data set: epoch order, batches and step counting on top of the
//! [`Trainer`], driven one step at a time (by the CLI's loop, or one step per frame in the demo).

use super::batch::{epoch_order, make_batch, Normalization};
use super::trainer::{TrainConfig, Trainer};
use crate::data::synthetic::SplitMix64;
use crate::data::Dataset;
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;

/// `data` restricted to `indices`, in that order.
pub fn subset(data: &Dataset, indices: &[usize]) -> Result<Dataset> {
    let mut out = Dataset { rows: data.rows, cols: data.cols, images: Vec::new(), labels: Vec::new() };
    for &i in indices {
        let img =
            data.image(i).ok_or_else(|| FdsrError::InvalidConfig(format!("index {i} past {} images", data.len())))?;
        out.images.extend_from_slice(img);
        out.labels.push(data.labels[i]);
    }
    Ok(out)
}

/// The first `n` images of a seeded shuffle of `data` (all of it when `n ≥ len`).
pub fn limit(data: &Dataset, n: usize, seed: u64) -> Result<Dataset> {
    if n >= data.len() {
        return Ok(data.clone());
    }
    let order = epoch_order(data.len(), seed ^ 0x5EED_11A1, 0);
    subset(data, &order[..n])
}

/// A trainer with its training set: knows the epoch, the step within it and the next batch.
pub struct Session {
    /// The trainer (model, optimizer, store).
    pub trainer: Trainer,
    /// Training images.
    pub train: Dataset,
    /// Normalization measured on the training images.
    pub norm: Normalization,
    order: Vec<usize>,
    order_epoch: Option<usize>,
}

impl Session {
    /// A session training `trainer` on `train`; errors when a batch needs more images than there are.
    pub fn new(trainer: Trainer, train: Dataset) -> Result<Session> {
        if trainer.config.batch > train.len() {
            return Err(FdsrError::InvalidConfig(format!(
                "batch {} is larger than the {} training images",
                trainer.config.batch,
                train.len()
            )));
        }
        let norm = Normalization::of(&train);
        Ok(Session { trainer, train, norm, order: Vec::new(), order_epoch: None })
    }

    /// The run's configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.trainer.config
    }

    /// Full batches per epoch (a last, partial batch is dropped).
    pub fn steps_per_epoch(&self) -> u64 {
        (self.train.len() / self.config().batch.max(1)) as u64
    }

    /// Steps of the whole run.
    pub fn total_steps(&self) -> u64 {
        self.steps_per_epoch() * self.config().epochs as u64
    }

    /// The epoch (0-based) the next step belongs to.
    pub fn epoch(&self) -> usize {
        (self.trainer.step / self.steps_per_epoch().max(1)) as usize
    }

    /// `true` when every step of the run has been taken.
    pub fn done(&self) -> bool {
        self.trainer.step >= self.total_steps()
    }

    /// Takes the next training step and returns the learning rate it used.
    pub async fn step(&mut self, ctx: &GpuContext) -> Result<f32> {
        if self.done() {
            return Err(FdsrError::InvalidConfig(format!("the run's {} steps are all done", self.total_steps())));
        }
        let (epoch, spe) = (self.epoch(), self.steps_per_epoch());
        if self.order_epoch != Some(epoch) {
            self.order = epoch_order(self.train.len(), self.config().seed, epoch);
            self.order_epoch = Some(epoch);
        }
        let b = self.config().batch;
        let first = (self.trainer.step % spe) as usize * b;
        let idx = &self.order[first..first + b];
        // Augmentation randomness depends only on (seed, step): a resumed run replays it.
        let mut rng = SplitMix64::new(self.config().seed ^ self.trainer.step.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let aug = self.config().augment.then_some(&mut rng);
        let (x, y) = make_batch(&self.train, idx, self.norm, aug)?;
        let lr = self.trainer.lr(spe);
        self.trainer.step(ctx, &x, &y, lr).await?;
        Ok(lr)
    }
}
