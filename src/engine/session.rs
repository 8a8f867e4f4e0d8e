//! A training run over a data set: epoch order, batches and step counting on top of the
//! [`Trainer`], driven one step at a time (by the CLI's loop, or one step per frame in the demo);
//! the checks of PFQ's plateau rule; seeded subsets and the validation split of a data set.

use super::batch::{epoch_order, make_batch, Normalization};
use super::precision::{Check, Precision, Signal};
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

/// A validation split of `n` images held out of `data` with its own `seed`: returns the images
/// left to train on (in their order in `data`) and the split, disjoint. `n` must leave at least
/// one image to train on.
pub fn hold_out(data: &Dataset, n: usize, seed: u64) -> Result<(Dataset, Dataset)> {
    if n >= data.len() {
        return Err(FdsrError::InvalidConfig(format!(
            "a validation split of {n} images leaves none of the {} training images to train on",
            data.len()
        )));
    }
    let order = epoch_order(data.len(), seed ^ 0x0A11_DA7E, 0);
    let mut rest = order[n..].to_vec();
    rest.sort_unstable();
    Ok((subset(data, &rest)?, subset(data, &order[..n])?))
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

    /// Sets the precision policy of conv and linear compute for this run's steps
    /// ([`Trainer::set_precision`]); call before the first step.
    pub fn set_precision(&mut self, ctx: &GpuContext, policy: Option<Precision>) -> Result<()> {
        let total = self.total_steps();
        self.trainer.set_precision(ctx, policy, total)
    }

    /// Checks PFQ's plateau rule if a check is due after the steps taken: with the loss of the
    /// validation split `val` at the current bits (`signal=val`), or with the mean training loss
    /// since the last check (`signal=train`), reading the metric sums here when some are unread
    /// (read them first to log them). `None` when no check is due.
    pub async fn check_precision(&mut self, ctx: &GpuContext, val: Option<&Dataset>) -> Result<Option<Check>> {
        if !self.trainer.precision.check_due() {
            return Ok(None);
        }
        let (norm, batch) = (self.norm, self.config().batch);
        let t = &mut self.trainer;
        let val_loss = match (t.precision.signal(), val) {
            (Some(Signal::Val), Some(v)) => Some(t.evaluate(ctx, v, norm, batch).await?.loss),
            (Some(Signal::Val), None) => {
                return Err(FdsrError::InvalidConfig(
                    "fractrain-pfq with signal=val needs a validation split (--val N)".into(),
                ))
            }
            _ => {
                if t.summed_steps > 0 {
                    t.read_metrics(ctx).await?;
                }
                None
            }
        };
        Ok(t.precision.check(val_loss))
    }

    /// Recalibrates the batch-norm running statistics on `batches` batches of the training
    /// images ([`Trainer::recalibrate_bn`]); returns the images used.
    pub async fn recalibrate_bn(&mut self, ctx: &GpuContext, batches: usize) -> Result<usize> {
        let (norm, batch) = (self.norm, self.config().batch);
        self.trainer.recalibrate_bn(ctx, &self.train, norm, batch, batches).await
    }

    /// Takes the next training step and returns the learning rate it used.
    pub async fn step(&mut self, ctx: &GpuContext) -> Result<f32> {
        let (x, y) = self.next_batch()?;
        let lr = self.trainer.lr(self.steps_per_epoch());
        self.trainer.step(ctx, &x, &y, lr).await?;
        Ok(lr)
    }

    /// The images (normalized, augmented when the run augments) and labels of the next step's
    /// batch, which depend only on the seed and the step.
    pub fn next_batch(&mut self) -> Result<(Vec<f32>, Vec<u8>)> {
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
        make_batch(&self.train, idx, self.norm, aug)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 50 one-pixel images whose pixel is their index.
    fn numbered() -> Dataset {
        Dataset { rows: 1, cols: 1, images: (0..50).collect(), labels: (0..50).map(|i| i % 10).collect() }
    }

    #[test]
    fn validation_split_is_disjoint_and_seeded() {
        let data = numbered();
        let (train, val) = hold_out(&data, 12, 7).unwrap();
        assert_eq!((train.len(), val.len()), (38, 12));
        let mut all: Vec<u8> = train.images.iter().chain(&val.images).copied().collect();
        all.sort_unstable();
        assert_eq!(all, data.images, "the two parts cover the data once");
        assert!(train.images.windows(2).all(|w| w[0] < w[1]), "training images keep their order");
        assert!(train
            .images
            .iter()
            .chain(&val.images)
            .zip(train.labels.iter().chain(&val.labels))
            .all(|(i, l)| i % 10 == *l));
        assert_eq!(hold_out(&data, 12, 7).unwrap().1, val, "the same seed, the same split");
        assert_ne!(hold_out(&data, 12, 8).unwrap().1, val, "another seed, another split");
        // Not the subset `limit` takes with the same seed.
        assert_ne!(limit(&data, 12, 7).unwrap(), val);
        assert_eq!(
            hold_out(&data, 0, 7).unwrap(),
            (data.clone(), Dataset { images: vec![], labels: vec![], ..data.clone() })
        );
        let e = hold_out(&data, 50, 7).unwrap_err().to_string();
        assert!(e.contains("split of 50 images") && e.contains("50 training images"), "{e}");
    }
}
