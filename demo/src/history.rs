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

/// Every snapshot of a run (the records of old steps are dropped past [`KEEP_RECORDS`]).
#[derive(Default)]
pub struct History {
    /// Snapshots in step order.
    pub steps: Vec<Snapshot>,
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

/// The fraction of eligible full tiles that were stored as references.
pub fn hit_rate(r: &TensorRecord) -> Option<f64> {
    (r.reuse_eligible > 0).then(|| r.reuse_hits as f64 / r.reuse_eligible as f64)
}
