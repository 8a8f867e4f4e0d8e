//! What the run measured, step by step: loss, accuracy, memory and the store's per-tensor
//! records, kept for the curves and the over-time heatmaps.

use fdsr::engine::saved::{SavedStats, TensorRecord};
use fdsr::gpu::{Category, MemoryReport};

/// One training step's measurements.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Steps taken after this one (1-based).
    pub step: u64,
    /// Mean training loss of the step.
    pub loss: f64,
    /// Training accuracy of the step.
    pub accuracy: f64,
    /// The pool's byte accounting after the step.
    pub memory: MemoryReport,
    /// The store's accounting of the step.
    pub saved: SavedStats,
    /// One record per saved tensor of the step.
    pub records: Vec<TensorRecord>,
}

/// One evaluation of the model on the held-out test images.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TestPoint {
    /// Training steps taken before it.
    pub step: u64,
    /// Mean test loss.
    pub loss: f64,
    /// Test accuracy.
    pub accuracy: f64,
    /// Test images evaluated.
    pub images: u64,
    /// Seconds the evaluation took (its own time, the frames between its batches included).
    pub seconds: f64,
}

/// Every snapshot of a run (the records of old steps are dropped past [`KEEP_RECORDS`]) and
/// its evaluations on held-out test images.
#[derive(Default)]
pub struct History {
    /// Snapshots in step order.
    pub steps: Vec<Snapshot>,
    /// Evaluations in step order.
    pub tests: Vec<TestPoint>,
}

/// Steps whose records are kept for the over-time heatmaps.
pub const KEEP_RECORDS: usize = 400;

impl History {
    /// Adds a step.
    pub fn push(&mut self, s: Snapshot) {
        self.steps.push(s);
        let n = self.steps.len();
        if n > KEEP_RECORDS {
            self.steps[n - KEEP_RECORDS - 1].records = Vec::new();
        }
    }

    /// The last step, if any.
    pub fn last(&self) -> Option<&Snapshot> {
        self.steps.last()
    }

    /// `[step, loss]` points.
    pub fn loss(&self) -> Vec<[f64; 2]> {
        self.steps.iter().map(|s| [s.step as f64, s.loss]).collect()
    }

    /// `[step, accuracy]` points.
    pub fn accuracy(&self) -> Vec<[f64; 2]> {
        self.steps.iter().map(|s| [s.step as f64, s.accuracy]).collect()
    }

    /// Snapshots that still hold records (the most recent ones).
    pub fn with_records(&self) -> impl Iterator<Item = &Snapshot> {
        self.steps.iter().filter(|s| !s.records.is_empty())
    }
}

/// Bytes the saved activations would take as f32, stored, and the peak the pool saw for them.
pub fn memory_gauge(s: &Snapshot) -> (u64, u64, u64) {
    (
        s.saved.fp32_bytes + s.saved.packed_bytes,
        s.saved.reserved_bytes + s.saved.packed_bytes,
        s.memory.peak_of(Category::SavedActivations),
    )
}

/// Exponential moving average of `points`' values (`alpha`: the weight of each new point),
/// started at the first value, so a noisy curve reads as a trend.
pub fn ema(points: &[[f64; 2]], alpha: f64) -> Vec<[f64; 2]> {
    let mut avg = None;
    points
        .iter()
        .map(|&[x, y]| {
            let a = avg.map_or(y, |m: f64| m + alpha * (y - m));
            avg = Some(a);
            [x, a]
        })
        .collect()
}

/// The fraction of eligible full tiles that were stored as references.
pub fn hit_rate(r: &TensorRecord) -> Option<f64> {
    (r.reuse_eligible > 0).then(|| r.reuse_hits as f64 / r.reuse_eligible as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ema_starts_at_the_first_value_and_follows_with_its_weight() {
        assert!(ema(&[], 0.5).is_empty());
        let e = ema(&[[1.0, 4.0], [2.0, 0.0], [3.0, 2.0]], 0.25);
        assert_eq!(e, vec![[1.0, 4.0], [2.0, 3.0], [3.0, 2.75]]);
        // A constant stays constant; alpha 1 is the raw curve.
        assert!(ema(&[[0.0, 2.0], [1.0, 2.0]], 0.1).iter().all(|p| p[1] == 2.0));
        let raw = [[0.0, 1.0], [1.0, 5.0]];
        assert_eq!(ema(&raw, 1.0), raw.to_vec());
    }
}
