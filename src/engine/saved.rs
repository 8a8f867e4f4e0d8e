//! The saved-activation store: every tensor an op keeps from forward for its backward goes
//! through [`SavedActivations`], the one place where activations are (or will be) compressed.

use std::collections::HashMap;

use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::Category;

/// What a saved tensor is, for accounting (and for the policy, which compresses only `Dense`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An f32 activation (conv, linear, batch-norm input).
    Dense,
    /// A packed 1-bit ReLU mask or 2-bit pooling index.
    Packed,
}

/// Bytes that went through the store, since it was created or last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SavedStats {
    /// Tensors saved.
    pub tensors: u64,
    /// What dense activations would take as f32.
    pub fp32_bytes: u64,
    /// What was stored for them.
    pub stored_bytes: u64,
    /// Bytes of packed masks and indices (stored as they are).
    pub packed_bytes: u64,
}

impl SavedStats {
    /// fp32 bytes of dense activations over the bytes stored for them and for the masks.
    pub fn ratio(&self) -> f64 {
        let stored = self.stored_bytes + self.packed_bytes;
        if stored == 0 {
            1.0
        } else {
            self.fp32_bytes as f64 / stored as f64
        }
    }
}

/// Tensors kept between a layer's forward and its backward, keyed by (layer id, slot).
#[derive(Default)]
pub struct SavedActivations {
    slots: HashMap<(usize, u8), Tensor>,
    stats: SavedStats,
}

impl SavedActivations {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `t` for the backward of `layer` in `slot` (replacing what was there).
    pub fn save(&mut self, layer: usize, slot: u8, t: &Tensor, kind: Kind) {
        t.set_category(Category::SavedActivations);
        let bytes = t.numel() as u64 * 4;
        self.stats.tensors += 1;
        match kind {
            Kind::Dense => {
                self.stats.fp32_bytes += bytes;
                self.stats.stored_bytes += bytes;
            }
            Kind::Packed => self.stats.packed_bytes += bytes,
        }
        self.slots.insert((layer, slot), t.clone());
    }

    /// Takes back what `layer` saved in `slot`; its memory is released when the caller drops it.
    pub fn load(&mut self, layer: usize, slot: u8) -> Result<Tensor> {
        let t = self.slots.remove(&(layer, slot)).ok_or_else(|| {
            FdsrError::InvalidConfig(format!(
                "layer {layer} has nothing saved in slot {slot}: backward without forward"
            ))
        })?;
        t.set_category(Category::Workspace);
        Ok(t)
    }

    /// Number of tensors held now.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Drops everything held (e.g. after an evaluation forward).
    pub fn clear(&mut self) {
        self.slots.clear();
    }

    /// Accounting since creation or the last [`SavedActivations::take_stats`].
    pub fn stats(&self) -> SavedStats {
        self.stats
    }

    /// Returns the accounting and starts a new window.
    pub fn take_stats(&mut self) -> SavedStats {
        std::mem::take(&mut self.stats)
    }
}
