//! Saved tensors recomputed instead of stored: a fused batch norm + ReLU's output (what the next
//! conv saves as its input, directly or through a max-pool) from the batch norm's own saved
//! input, its batch statistics, its shift and the ReLU's mask (and the max-pool's indices), all
//! of which the step holds anyway for those layers' backward. A compressed step then stores one
//! tensor where `none` holds two, and the codec's share of the budget goes to the one it stores:
//! the re-applied output has the same relative error as its stored input, and its zeros are
//! exact (the ReLU's mask).

use super::{Key, SavedActivations, Stored};
use crate::codec::config::Policy;
use crate::codec::resident::record_decode;
use crate::engine::ops::{self, BitMask, BnSaved};
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

/// How a fused batch norm + ReLU's output is recomputed from what its layer keeps.
#[derive(Clone, Debug)]
pub struct Derivation {
    /// Where the batch norm saved its input.
    pub source: Key,
    /// What its training forward saved (kept by the layer until its backward).
    pub saved: BnSaved,
    /// Its shift, as the forward used it (the optimizer steps after the whole backward).
    pub beta: Tensor,
    /// Where the ReLU saved its mask, and the number of values the mask covers.
    pub mask: (Key, usize),
    /// Where a max-pool of the output saved its indices, and their number: the tensor is the
    /// pooled output.
    pub pool: Option<(Key, usize)>,
}

/// A tensor that can be recomputed: its id and shape, and how.
#[derive(Clone, Debug)]
pub(super) struct Recipe {
    id: u64,
    shape: Vec<usize>,
    pub(super) how: Derivation,
}

impl Recipe {
    fn of(&self, t: &Tensor) -> bool {
        self.id == t.id() && self.shape == t.shape()
    }
}

impl SavedActivations {
    /// Declares that `output` can be recomputed by `d`. Where the step saves it later as a
    /// compressed tensor, only the recipe is kept: nothing is stored or encoded, and the plan
    /// and the accounting count its fp32 bytes (what `none` holds) and no stored byte. Nothing
    /// is kept without a policy.
    pub fn derivable(&mut self, output: &Tensor, d: Derivation) {
        if self.policy.is_some() || self.recording.is_some() {
            self.recipes.push(Recipe { id: output.id(), shape: output.shape().to_vec(), how: d });
        }
    }

    /// Declares that `pooled`, a max-pool's output of `x` whose indices are saved at `index`
    /// (`len` of them), can be recomputed where `x` can.
    pub fn derivable_pooled(&mut self, x: &Tensor, pooled: &Tensor, index: (Key, usize)) {
        let Some(r) = self.recipe(x).filter(|r| r.how.pool.is_none()) else { return };
        let how = Derivation { pool: Some(index), ..r.how.clone() };
        self.recipes.push(Recipe { id: pooled.id(), shape: pooled.shape().to_vec(), how });
    }

    /// The recipe of `t` (the same tensor in the same shape), saved already or not.
    pub(super) fn recipe(&self, t: &Tensor) -> Option<&Recipe> {
        let saved = self.derived.iter().map(|d| &d.1).find(|r| r.of(t));
        saved.or_else(|| self.recipes.iter().find(|r| r.of(t)))
    }

    /// The recipe of `t` for its save (a later save of the same tensor finds it among the derived).
    pub(super) fn take_recipe(&mut self, t: &Tensor) -> Option<Recipe> {
        let r = self.recipe(t)?.clone();
        self.recipes.retain(|r| !r.of(t));
        Some(r)
    }

    /// Whether a mask-aware decode also clamps kept values at 0 (`fdsr` with `,mask=clamp`).
    pub(super) fn clamps(&self) -> bool {
        matches!(&self.policy, Some(Policy::Fdsr(c)) if c.mask_clamp)
    }

    /// Records the decode of `s` into a new tensor, with its zero mask re-applied.
    pub(super) fn decode(&self, ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, s: &Stored) -> Result<Tensor> {
        let t = Tensor::uninit(ctx, &s.resident.shape, Category::Workspace);
        record_decode(ctx, enc, &s.resident, t.buffer())?;
        match &s.mask {
            Some(mask) if self.clamps() => ops::mask_clamp(ctx, enc, t, mask),
            Some(mask) => ops::relu_backward(ctx, enc, t, mask),
            None => Ok(t),
        }
    }

    /// Records the recomputation of a derived tensor: its source decoded (and left stored for
    /// its own load) or taken as kept, then the batch norm and the ReLU's mask re-applied.
    pub(super) fn rederive(&self, ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, d: &Derivation) -> Result<Tensor> {
        let missing = |what: &str, k: Key| {
            FdsrError::InvalidConfig(format!(
                "a derived tensor's {what} (layer {}, slot {}) is no longer held: loaded before the tensor derived from it",
                k.0, k.1
            ))
        };
        let source = self.aliases.iter().find(|a| a.0 == d.source).map_or(d.source, |a| a.1);
        let x = match self.stored.iter().find(|s| s.key == source) {
            Some(s) => self.decode(ctx, enc, s)?,
            None => self.slots.get(&source).cloned().ok_or_else(|| missing("source", source))?,
        };
        let held = |(k, len): (Key, usize), what: &str| {
            self.slots.get(&k).cloned().map(|words| (words, len)).ok_or_else(|| missing(what, k))
        };
        let (words, len) = held(d.mask, "mask")?;
        let y = ops::batchnorm_reapply(ctx, enc, x, (&d.saved, &d.beta), &BitMask { words, len }, self.clamps())?;
        match d.pool {
            Some(index) => {
                let (words, len) = held(index, "max-pool indices")?;
                ops::maxpool2_gather(ctx, enc, &y, &ops::PoolIndex { words, len })
            }
            None => Ok(y),
        }
    }
}
