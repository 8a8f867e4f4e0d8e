//! The saved-activation store: every tensor an op keeps from forward for its backward goes
//! through [`SavedActivations`], the one place where activations are compressed.
//!
//! Without a policy, tensors stay on the device as they are (fp32). With one, dense 4-D
//! activations ([`compressible`]) are queued by [`SavedActivations::save`] and encoded by
//! [`SavedActivations::flush`] into device-resident regions ([`crate::codec::resident`]),
//! recorded into the caller's command encoder right after the op that saved them
//! (`Pass::save` does both); their fp32 buffers return to the pool at once.
//! [`SavedActivations::load`] records the decode of one tensor straight into a pooled device
//! tensor just before the backward op that reads it (`Pass::load`). Nothing of an
//! activation, and no per-tensor metadata, crosses to the host: the bits are chosen on the
//! device, and what only the device knows (bytes written, reuse counts, the allocation's
//! statistics) is read when asked for ([`SavedActivations::take_stats`],
//! [`SavedActivations::read_records`]). A tensor the step can recompute from what it holds
//! anyway — a batch norm's fused ReLU output, pooled or not ([`Derivation`]) — is not stored:
//! its load recomputes it.
//!
//! A mask-aware `fdsr` policy (`,mask`) keeps the exact zero mask of ReLU outputs ([`crate::engine::tensor::Sign`]):
//! the ReLU's own mask (counted once, by the ReLU); `,mask=zeros` and `,mask=clamp` also compute
//! one for other tensors known to be ≥ 0 (counted with the tensor, one bit per value of its
//! budget). Restoring re-applies it, unbiased (`,mask=clamp` also clamps at 0). Per-layer budgets
//! ([`SavedActivations::set_budgets`]) override the policy's budget.

use std::collections::HashMap;

use super::ops::BitMask;
use super::tensor::Tensor;
use crate::codec::config::{CodecOptions, Policy, Rounding};
use crate::codec::resident::{record_encode, Resident};
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

mod budget;
mod derive;
pub mod plan;
mod records;
mod stats;
pub use derive::Derivation;
use derive::Recipe;
pub use plan::{Plan, PlanItem};
pub use records::PendingRecord;
pub use stats::{SavedStats, TensorRecord};

/// Smaller dense tensors stay exact (tiny layers are not worth it).
pub const MIN_COMPRESSED_NUMEL: usize = 4096;
/// Least budget (bits per value) asked of the codec for one tensor.
pub const MIN_CODEC_BUDGET: f64 = 0.25;

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

/// A tensor queued for encoding.
struct Pending {
    seq: u64,
    key: Key,
    name: String,
    tensor: Tensor,
}

/// A device-resident stored tensor (of the fp32 tensor with id `tensor`) and the mask that its
/// decode re-applies.
struct Stored {
    key: Key,
    tensor: u64,
    resident: Resident,
    mask: Option<BitMask>,
}

/// Tensors kept between a layer's forward and its backward, keyed by (layer id, slot).
#[derive(Default)]
pub struct SavedActivations {
    policy: Option<Policy>,
    seed: u32,
    slots: HashMap<Key, Tensor>,
    pending: Vec<Pending>,
    aliases: Vec<(Key, Key)>,
    stored: Vec<Stored>,
    /// Tensors that can be recomputed ([`Self::derivable`]), not yet saved.
    recipes: Vec<Recipe>,
    /// Saved tensors kept as their recipe.
    derived: Vec<(Key, Recipe)>,
    seq: u64,
    stats: SavedStats,
    /// The device's window totals (bytes used, reuse hits, reuse-eligible tiles), made on first use.
    acc: Option<Tensor>,
    budgets: HashMap<String, f64>,
    records: Vec<PendingRecord>,
    /// Images of the whole batch and of the batch seen, for which tensors are compressed.
    share: Option<(usize, usize)>,
    /// The step plan's budgets, where the controller has set none.
    plan_budgets: HashMap<String, f64>,
    /// A recorder's list of what was saved (with the tensors, to find second saves).
    recording: Option<Vec<(PlanItem, Tensor)>>,
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

    /// Whether dense activations are compressed.
    pub fn compresses(&self) -> bool {
        self.policy.is_some()
    }

    /// Starts a training step: drops what is held and the last step's records, and seeds
    /// stochastic rounding (the trainer passes a seed made of its seed and step).
    pub fn begin_step(&mut self, seed: u32) {
        self.clear();
        self.records.clear();
        self.seed = seed;
    }

    /// The policy the store compresses with (`None`: fp32).
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    /// Keeps `t` for the backward of `layer` in `slot` (replacing what was there); `name` says
    /// which layer and what (`conv2.input`) in the records.
    pub fn save(&mut self, layer: usize, slot: u8, name: &str, t: &Tensor, kind: Kind) {
        let derived = self.recording.is_some() && kind == Kind::Dense && self.recipe(t).is_some();
        if let Some(rec) = &mut self.recording {
            let alias = rec.iter().any(|(_, s)| s.id() == t.id());
            let item = PlanItem { name: name.to_string(), shape: t.shape().to_vec(), kind, alias, derived };
            rec.push((item, t.clone()));
            return;
        }
        t.set_category(Category::SavedActivations);
        let bytes = t.numel() as u64 * 4;
        self.stats.tensors += 1;
        self.seq += 1;
        let form = match kind {
            Kind::Dense if self.compresses_shape(t.shape()) => {
                if let Some(r) = self.take_recipe(t) {
                    self.stats.fp32_bytes += bytes;
                    // The source's record: the first this step made for its layer (its input).
                    let source = self.records.iter().map(|p| p.name_at()).find(|n| n.1 == r.how.source.0).map(|n| n.0);
                    self.records.push(PendingRecord::derived(name, layer, t.shape(), bytes, source));
                    self.derived.push(((layer, slot), r));
                    return;
                }
                // A tensor saved twice in one group (a residual block's input, by its first
                // conv and its projection) is stored and counted once.
                let pending = self.pending.iter().find(|p| p.tensor.id() == t.id()).map(|p| p.key);
                if let Some(orig) = pending.or_else(|| self.stored.iter().find(|s| s.tensor == t.id()).map(|s| s.key)) {
                    self.aliases.push(((layer, slot), orig));
                    return;
                }
                self.stats.fp32_bytes += bytes;
                self.pending.push(Pending {
                    seq: self.seq,
                    key: (layer, slot),
                    name: name.to_string(),
                    tensor: t.clone(),
                });
                return;
            }
            Kind::Dense => {
                self.stats.fp32_bytes += bytes;
                self.stats.stored_bytes += bytes;
                self.stats.reserved_bytes += bytes;
                "fp32"
            }
            Kind::Packed => {
                self.stats.packed_bytes += bytes;
                "packed"
            }
        };
        self.records.push(PendingRecord::kept(name, layer, t.shape(), bytes, form));
        self.slots.insert((layer, slot), t.clone());
    }

    /// The window totals on the device (16 bytes, zeroed when made).
    fn acc(&mut self, ctx: &GpuContext) -> Result<Tensor> {
        if self.acc.is_none() {
            self.acc = Some(Tensor::from_slice(ctx, &[0.0; 4], &[4], Category::Workspace)?);
        }
        self.acc.clone().ok_or_else(|| FdsrError::InvalidConfig("no window totals".into()))
    }

    /// Records the encoding of every queued tensor into `enc`, after the work that wrote them.
    /// Their fp32 buffers are released as soon as each is recorded.
    pub fn flush(&mut self, ctx: &GpuContext, enc: &mut wgpu::CommandEncoder) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let acc = self.acc(ctx)?;
        for Pending { seq, key, name, tensor: t } in std::mem::take(&mut self.pending) {
            let mask = self.mask_for(ctx, enc, &t, &name)?;
            let own_mask = mask.as_ref().is_some_and(|m| m.1);
            let Some(policy) = self.policy_for(&name, own_mask) else { break };
            let opts = CodecOptions { seed: self.seed, tensor_id: seq as u32, rounding: Rounding::Stochastic };
            let r = record_encode(
                ctx,
                enc,
                t.buffer(),
                t.shape(),
                &policy,
                &opts,
                Category::SavedActivations,
                acc.buffer(),
            )
            .map_err(|e| name_error(&name, e))?;
            let mask_bytes = if own_mask { mask.as_ref().map_or(0, |m| m.0.words.numel() as u64 * 4) } else { 0 };
            self.stats.reserved_bytes += r.reserved_bytes() + mask_bytes;
            if let Some(used) = r.host_used_bytes() {
                self.stats.stored_bytes += used + mask_bytes;
            } else {
                self.stats.stored_bytes += mask_bytes;
            }
            self.records.push(PendingRecord::stored(&name, key.0, &r, &policy, mask.as_ref().map(|_| mask_bytes)));
            self.stored.push(Stored { key, tensor: t.id(), resident: r, mask: mask.map(|m| m.0) });
        }
        Ok(())
    }

    /// Takes back what `layer` saved in `slot`, recording its decode into `enc` first where it
    /// was stored compressed (just in time: one decoded tensor at a time, not a whole block's);
    /// its memory is released when the caller drops it. A tensor saved under two keys is decoded
    /// once and handed to both.
    pub fn load(&mut self, ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, layer: usize, slot: u8) -> Result<Tensor> {
        let key = (layer, slot);
        let derived = self.derived.iter().position(|d| d.0 == key);
        let t = match (self.slots.remove(&key), derived) {
            (Some(t), _) => t,
            (None, Some(i)) => {
                let (_, r) = self.derived.remove(i);
                self.rederive(ctx, enc, &r.how)?
            }
            (None, None) => {
                let orig = self.aliases.iter().find(|a| a.0 == key).map_or(key, |a| a.1);
                let i = self.stored.iter().position(|s| s.key == orig).ok_or_else(|| {
                    FdsrError::InvalidConfig(format!(
                        "layer {layer} has nothing saved in slot {slot}: backward without forward, or loaded twice"
                    ))
                })?;
                let t = self.decode(ctx, enc, &self.stored[i])?;
                self.stored.remove(i);
                let others: Vec<Key> = self
                    .aliases
                    .iter()
                    .filter(|a| a.1 == orig)
                    .map(|a| a.0)
                    .chain([orig])
                    .filter(|&k| k != key)
                    .collect();
                for k in others {
                    self.slots.insert(k, t.clone());
                }
                t
            }
        };
        t.set_category(Category::Workspace);
        Ok(t)
    }

    /// Number of tensors held now (on the device, queued or stored).
    pub fn len(&self) -> usize {
        self.slots.len() + self.pending.len() + self.stored.len() + self.derived.len()
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
        self.stored.clear();
        self.recipes.clear();
        self.derived.clear();
        self.seq = 0;
    }

    /// Accounting since creation or the last [`Self::take_stats`] that the host knows without
    /// the device: bytes used by `fdsr` tensors and reuse counts are added by [`Self::take_stats`].
    pub fn host_stats(&self) -> SavedStats {
        self.stats
    }

    /// Returns the window's accounting, with the device's totals (one readback, after the
    /// window's work is submitted), and starts a new window.
    pub async fn take_stats(&mut self, ctx: &GpuContext) -> Result<SavedStats> {
        let mut s = std::mem::take(&mut self.stats);
        if let Some(acc) = &self.acc {
            let w: Vec<u32> = acc.to_vec(ctx).await?.into_iter().map(f32::to_bits).collect();
            acc.write(ctx, &[0.0; 4])?;
            s.stored_bytes += u64::from(w[0]) | (u64::from(w[1]) << 32);
            s.reuse_hits += u64::from(w[2]);
            s.reuse_eligible += u64::from(w[3]);
        }
        Ok(s)
    }

    /// The records of every tensor saved in the current (or last) training step, in save order,
    /// with what the device measured of each (one readback; the step's work must be submitted).
    pub async fn read_records(&self, ctx: &GpuContext) -> Result<Vec<TensorRecord>> {
        records::read(ctx, &self.records).await
    }

    /// The records of the current (or last) step as the host knows them, without a readback
    /// (names, shapes, sources: what a measuring probe needs; [`Self::read_records`] completes
    /// them from the device).
    pub fn known_records(&self) -> Vec<TensorRecord> {
        records::known(&self.records)
    }
}

/// `e` with the saved tensor's name, for errors of one tensor's encoding (a budget too low).
fn name_error(name: &str, e: FdsrError) -> FdsrError {
    match e {
        FdsrError::BudgetTooLow { budget, needed } => FdsrError::InvalidConfig(format!(
            "{name}: a budget of {budget} bits per value is below the {needed:.3} its metadata needs \
             (a ratio of at most {:.1})",
            32.0 / needed
        )),
        other => other,
    }
}
