//! The saved-activation store: every tensor an op keeps from forward for its backward goes
//! through [`SavedActivations`], the one place where activations are compressed.
//!
//! Without a policy, tensors stay on the device as they are (fp32). With one, dense 4-D
//! activations ([`compressible`]) are queued by [`SavedActivations::save`] and
//! compressed by [`SavedActivations::flush`] (which the trainer awaits after each top-level
//! layer, once the work that produced them is submitted); their fp32 buffers return to the pool
//! at once. [`SavedActivations::restore_since`] decompresses a group back into device tensors
//! before its backward is recorded. Packed masks and indices are kept as they are.
//!
//! A mask-aware `fdsr` policy (`,mask`) keeps the exact zero mask of tensors known to be ≥ 0
//! ([`Sign`]): the ReLU's own mask when the tensor is a ReLU output (counted once, by the ReLU),
//! else a mask computed here (counted with the tensor); restoring re-applies it and clamps at 0.
//! Per-layer budgets ([`SavedActivations::set_budgets`]) override the policy's budget, and every
//! saved tensor of the last step leaves a [`TensorRecord`].

use std::collections::HashMap;

use super::ops::{self, BitMask};
use super::tensor::{Sign, Tensor};
use crate::codec::api::{compress_buffer_with_stats, decompress};
use crate::codec::config::{BitChoice, CodecOptions, Policy, Rounding};
use crate::codec::format::{Body, Compressed};
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

mod stats;
pub use stats::{SavedStats, TensorRecord};

/// Smaller dense tensors stay exact (tiny layers are not worth it).
pub const MIN_COMPRESSED_NUMEL: usize = 4096;
/// Least budget (bits per value) asked of the codec for one tensor.
pub const MIN_CODEC_BUDGET: f64 = 0.25;

/// Records `f` into a new encoder and submits it (between the trainer's own submits).
async fn record<T>(ctx: &GpuContext, what: &str, f: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<T>) -> Result<T> {
    ctx.scoped(what, || {
        let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        let out = f(&mut enc)?;
        ctx.queue.submit([enc.finish()]);
        Ok(out)
    })
    .await?
}

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

type Key = (usize, u8);

/// A compressed tensor and the mask that its decode re-applies.
struct Stored {
    seq: u64,
    key: Key,
    c: Compressed,
    mask: Option<BitMask>,
}

/// Tensors kept between a layer's forward and its backward, keyed by (layer id, slot).
#[derive(Default)]
pub struct SavedActivations {
    policy: Option<Policy>,
    seed: u32,
    slots: HashMap<Key, Tensor>,
    pending: Vec<(u64, Key, String, Tensor)>,
    aliases: Vec<(Key, Key)>,
    compressed: Vec<Stored>,
    seq: u64,
    stats: SavedStats,
    budgets: HashMap<String, f64>,
    records: Vec<TensorRecord>,
    exact: Option<HashMap<Key, Tensor>>,
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

    /// Starts a training step: drops what is held and the last step's records, and seeds
    /// stochastic rounding (the trainer passes seed and step). With `keep_exact`, the fp32 form of
    /// every compressed tensor is kept too, for [`Self::restore_exact_since`] (the probe).
    pub fn begin_step(&mut self, seed: u32, keep_exact: bool) {
        self.clear();
        self.records.clear();
        self.seed = seed;
        self.exact = keep_exact.then(HashMap::new);
    }

    /// The records of every tensor saved in the current (or last) training step, in save order.
    pub fn records(&self) -> &[TensorRecord] {
        &self.records
    }

    /// Budgets (bits per value) by saved-tensor name, overriding the policy's budget for those
    /// tensors (the controller's per-layer allocation). Fixed-bit policies ignore them.
    pub fn set_budgets(&mut self, budgets: HashMap<String, f64>) {
        self.budgets = budgets;
    }

    /// The policy the store compresses with (`None`: fp32).
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    /// Sequence number of the next save: group boundaries for [`Self::restore_since`].
    pub fn mark(&self) -> u64 {
        self.seq
    }

    /// Keeps `t` for the backward of `layer` in `slot` (replacing what was there); `name` says
    /// which layer and what (`conv2.input`) in the records.
    pub fn save(&mut self, layer: usize, slot: u8, name: &str, t: &Tensor, kind: Kind) {
        t.set_category(Category::SavedActivations);
        let bytes = t.numel() as u64 * 4;
        self.stats.tensors += 1;
        self.seq += 1;
        let form = match kind {
            Kind::Dense if self.policy.is_some() && compressible(t.shape()) => {
                // A tensor saved twice in one group (a residual block's input, by its first
                // conv and its projection) is stored and counted once.
                if let Some(orig) = self.pending.iter().find(|p| p.3.same_buffer(t)).map(|p| p.1) {
                    self.aliases.push(((layer, slot), orig));
                    return;
                }
                self.stats.fp32_bytes += bytes;
                self.pending.push((self.seq, (layer, slot), name.to_string(), t.clone()));
                return;
            }
            Kind::Dense => {
                self.stats.fp32_bytes += bytes;
                self.stats.stored_bytes += bytes;
                "fp32"
            }
            Kind::Packed => {
                self.stats.packed_bytes += bytes;
                "packed"
            }
        };
        self.records.push(TensorRecord {
            name: name.to_string(),
            layer,
            shape: t.shape().to_vec(),
            fp32_bytes: bytes,
            stored_bytes: bytes,
            form: form.to_string(),
            bits: Vec::new(),
            classes: [0; 4],
            band_energy: Vec::new(),
            reuse_hits: 0,
            reuse_eligible: 0,
            budget: None,
            own_mask: false,
            analysis: None,
        });
        self.slots.insert((layer, slot), t.clone());
    }

    /// The policy for the tensor `name`: the store's, with its per-layer budget where set.
    fn policy_for(&self, name: &str, own_mask: bool) -> Option<Policy> {
        let mut p = self.policy.clone()?;
        if let Policy::Fdsr(c) = &mut p {
            if let BitChoice::Budget(b) = &mut c.bits {
                *b = self.budgets.get(name).copied().unwrap_or(*b);
                // An own zero mask costs one bit per value of the tensor's budget.
                if own_mask {
                    *b = (*b - 1.0).max(MIN_CODEC_BUDGET);
                }
            }
        }
        Some(p)
    }

    /// The zero mask a mask-aware policy keeps for `t`, and whether it is the tensor's own (not
    /// the ReLU's); `None` where the policy is not mask-aware or the sign of `t` is unknown.
    async fn mask_for(&self, ctx: &GpuContext, t: &Tensor) -> Result<Option<(BitMask, bool)>> {
        let aware = matches!(&self.policy, Some(Policy::Fdsr(c)) if c.mask_aware);
        Ok(match t.sign() {
            _ if !aware => None,
            Sign::Any => None,
            Sign::Masked(words) => Some((BitMask { words: (**words).clone(), len: t.numel() }, false)),
            Sign::NonNegative => {
                let mask = record(ctx, "positive mask", |enc| ops::positive_mask(ctx, enc, t)).await?;
                Some((mask, true))
            }
        })
    }

    /// Compresses every queued tensor; the work that wrote them must be submitted. Their fp32
    /// buffers are released as soon as each is packed.
    pub async fn flush(&mut self, ctx: &GpuContext) -> Result<()> {
        for (seq, key, name, t) in std::mem::take(&mut self.pending) {
            let mask = self.mask_for(ctx, &t).await?;
            let own_mask = mask.as_ref().is_some_and(|m| m.1);
            let Some(policy) = self.policy_for(&name, own_mask) else { break };
            let opts = CodecOptions { seed: self.seed, tensor_id: seq as u32, rounding: Rounding::Stochastic };
            let (c, st) = compress_buffer_with_stats(ctx, t.buffer(), t.shape(), &policy, &opts).await?;
            let mask_bytes = if own_mask { mask.as_ref().map_or(0, |m| m.0.words.numel() as u64 * 4) } else { 0 };
            let stored = c.stored_bytes() as u64 + mask_bytes;
            self.stats.stored_bytes += stored;
            let reuse = st.reuse.unwrap_or_default();
            self.stats.reuse_hits += reuse.hits;
            self.stats.reuse_eligible += reuse.eligible;
            let bits = match &c.body {
                Body::Fdsr(f) => f.bits.clone(),
                _ => Vec::new(),
            };
            // The analysis counts references among the full tiles (reuse comes after it).
            let classes = st
                .analysis
                .as_ref()
                .map_or([0; 4], |a| [a.zero_tiles, a.dc_tiles, a.full_tiles.saturating_sub(reuse.hits), reuse.hits]);
            let budget = match &policy {
                Policy::Fdsr(cfg) => match cfg.bits {
                    BitChoice::Budget(b) => Some(b),
                    BitChoice::Fixed(_) => None,
                },
                _ => None,
            };
            self.records.push(TensorRecord {
                name,
                layer: key.0,
                shape: t.shape().to_vec(),
                fp32_bytes: t.numel() as u64 * 4,
                stored_bytes: stored,
                form: policy.to_string(),
                bits,
                classes,
                band_energy: st.analysis.as_ref().map_or_else(Vec::new, |a| a.band_energy.clone()),
                reuse_hits: reuse.hits,
                reuse_eligible: reuse.eligible,
                budget,
                own_mask,
                analysis: st.analysis,
            });
            match &mut self.exact {
                Some(exact) => {
                    exact.insert(key, t);
                }
                None => drop(t),
            }
            self.compressed.push(Stored { seq, key, c, mask: mask.map(|m| m.0) });
        }
        Ok(())
    }

    /// Decompresses every tensor saved at or after `mark` back onto the device; nothing may be
    /// recorded and unsubmitted (the uploads go ahead of it).
    pub async fn restore_since(&mut self, ctx: &GpuContext, mark: u64) -> Result<()> {
        while self.compressed.last().is_some_and(|s| s.seq > mark) {
            let Some(s) = self.compressed.pop() else { break };
            let values = decompress(ctx, &s.c).await?;
            let mut t = Tensor::from_slice(ctx, &values, &s.c.shape, Category::Workspace)?;
            if let Some(mask) = &s.mask {
                t = record(ctx, "mask-aware restore", |enc| ops::mask_clamp(ctx, enc, &t, mask)).await?;
            }
            for (alias, _) in self.aliases.iter().filter(|a| a.1 == s.key) {
                self.slots.insert(*alias, t.clone());
            }
            self.slots.insert(s.key, t);
        }
        Ok(())
    }

    /// Puts the exact fp32 form of every compressed tensor in place, as kept by
    /// [`Self::begin_step`]`(_, true)`, leaving the compressed ones for a second backward.
    pub fn restore_exact(&mut self) -> Result<()> {
        let exact = self.exact.as_ref().ok_or_else(|| {
            FdsrError::InvalidConfig("exact activations were not kept for this step (begin_step(_, true))".into())
        })?;
        self.slots.extend(exact.iter().map(|(k, t)| (*k, t.clone())));
        for (alias, orig) in &self.aliases {
            if let Some(t) = exact.get(orig) {
                self.slots.insert(*alias, t.clone());
            }
        }
        Ok(())
    }

    /// The tensors held on the device now (a probe snapshots them between its two backwards).
    pub fn snapshot(&self) -> HashMap<(usize, u8), Tensor> {
        self.slots.clone()
    }

    /// Puts back a [`Self::snapshot`].
    pub fn put_back(&mut self, slots: HashMap<(usize, u8), Tensor>) {
        self.slots = slots;
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
        self.aliases.clear();
        self.compressed.clear();
        self.exact = None;
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
