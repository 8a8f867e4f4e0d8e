//! The saved-activation store: every tensor an op keeps from forward for its backward goes
//! through [`SavedActivations`], the one place where activations are compressed.
//!
//! Without a policy, tensors stay on the device as they are (fp32). With one, dense 4-D
//! activations ([`compressible`]) are queued by [`SavedActivations::save`] and
//! compressed by [`SavedActivations::flush`] (which the trainer awaits after each top-level
//! layer, once the work that produced them is submitted); their fp32 buffers return to the pool
//! at once. [`SavedActivations::restore_since`] decompresses a group back into device tensors
//! before its backward is recorded. Packed masks and indices are kept as they are.

use std::collections::HashMap;

use super::tensor::Tensor;
use crate::codec::api::{compress_buffer, decompress};
use crate::codec::config::{CodecOptions, Policy, Rounding};
use crate::codec::format::Compressed;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

/// Smaller dense tensors stay exact (tiny layers are not worth it).
pub const MIN_COMPRESSED_NUMEL: usize = 4096;

/// Whether a dense tensor of `shape` is compressed under a policy: 4-D activations of at least
/// [`MIN_COMPRESSED_NUMEL`] values. The classifier's input (rank 2, next to the loss) stays exact,
/// as in the measurements of DESIGN.md §2 (2-bit storage of every tensor diverged).
pub fn compressible(shape: &[usize]) -> bool {
    shape.len() == 4 && shape.iter().product::<usize>() >= MIN_COMPRESSED_NUMEL
}

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
    /// What was stored for them (serialized size of compressed ones, metadata included).
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

    /// Adds another window's counts.
    pub fn add(&mut self, o: &SavedStats) {
        self.tensors += o.tensors;
        self.fp32_bytes += o.fp32_bytes;
        self.stored_bytes += o.stored_bytes;
        self.packed_bytes += o.packed_bytes;
    }
}

type Key = (usize, u8);

/// Tensors kept between a layer's forward and its backward, keyed by (layer id, slot).
#[derive(Default)]
pub struct SavedActivations {
    policy: Option<Policy>,
    seed: u32,
    slots: HashMap<Key, Tensor>,
    pending: Vec<(u64, Key, Tensor)>,
    compressed: Vec<(u64, Key, Compressed)>,
    seq: u64,
    stats: SavedStats,
}

impl SavedActivations {
    /// An empty store that keeps everything as fp32.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store compressing dense activations with `policy` (`None`: fp32).
    pub fn with_policy(policy: Option<Policy>) -> Result<Self> {
        if let Some(p) = &policy {
            p.validate()?;
        }
        Ok(SavedActivations { policy, ..Default::default() })
    }

    /// Whether dense activations are compressed (the trainer then flushes per layer).
    pub fn compresses(&self) -> bool {
        self.policy.is_some()
    }

    /// Seeds stochastic rounding for the next step (the trainer passes seed and step).
    pub fn set_seed(&mut self, seed: u32) {
        self.seed = seed;
    }

    /// Sequence number of the next save: group boundaries for [`Self::restore_since`].
    pub fn mark(&self) -> u64 {
        self.seq
    }

    /// Keeps `t` for the backward of `layer` in `slot` (replacing what was there).
    pub fn save(&mut self, layer: usize, slot: u8, t: &Tensor, kind: Kind) {
        t.set_category(Category::SavedActivations);
        let bytes = t.numel() as u64 * 4;
        self.stats.tensors += 1;
        self.seq += 1;
        match kind {
            Kind::Dense if self.policy.is_some() && compressible(t.shape()) => {
                self.stats.fp32_bytes += bytes;
                self.pending.push((self.seq, (layer, slot), t.clone()));
                return;
            }
            Kind::Dense => {
                self.stats.fp32_bytes += bytes;
                self.stats.stored_bytes += bytes;
            }
            Kind::Packed => self.stats.packed_bytes += bytes,
        }
        self.slots.insert((layer, slot), t.clone());
    }

    /// Compresses every queued tensor; the work that wrote them must be submitted. Their fp32
    /// buffers are released as soon as each is packed.
    pub async fn flush(&mut self, ctx: &GpuContext) -> Result<()> {
        let Some(policy) = self.policy.clone() else { return Ok(()) };
        for (seq, key, t) in std::mem::take(&mut self.pending) {
            let opts = CodecOptions { seed: self.seed, tensor_id: seq as u32, rounding: Rounding::Stochastic };
            let c = compress_buffer(ctx, t.buffer(), t.shape(), &policy, &opts).await?;
            drop(t);
            self.stats.stored_bytes += c.stored_bytes() as u64;
            self.compressed.push((seq, key, c));
        }
        Ok(())
    }

    /// Decompresses every tensor saved at or after `mark` back onto the device; nothing may be
    /// recorded and unsubmitted (the uploads go ahead of it).
    pub async fn restore_since(&mut self, ctx: &GpuContext, mark: u64) -> Result<()> {
        while self.compressed.last().is_some_and(|(seq, _, _)| *seq > mark) {
            let Some((_, key, c)) = self.compressed.pop() else { break };
            let values = decompress(ctx, &c).await?;
            self.slots.insert(key, Tensor::from_slice(ctx, &values, &c.shape, Category::Workspace)?);
        }
        Ok(())
    }

    /// Takes back what `layer` saved in `slot`; its memory is released when the caller drops it.
    pub fn load(&mut self, layer: usize, slot: u8) -> Result<Tensor> {
        let t = self.slots.remove(&(layer, slot)).ok_or_else(|| {
            FdsrError::InvalidConfig(format!(
                "layer {layer} has nothing saved in slot {slot}: backward without forward, or not restored"
            ))
        })?;
        t.set_category(Category::Workspace);
        Ok(t)
    }

    /// Number of tensors held now (on the device, queued or compressed).
    pub fn len(&self) -> usize {
        self.slots.len() + self.pending.len() + self.compressed.len()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops everything held (e.g. after an evaluation forward) and restarts the sequence.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.pending.clear();
        self.compressed.clear();
        self.seq = 0;
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
