//! What the store compresses and with how many bits: the step plan's and the controller's
//! per-tensor budgets, an own zero mask where the budget has room for it, the probe's sub-batch
//! judged at batch scale, and the recorder that lets the plan see what a step saves.

use std::collections::HashMap;

use super::{compressible, PlanItem, SavedActivations, MIN_CODEC_BUDGET};
use crate::codec::config::{BitChoice, Policy};
use crate::engine::ops::{self, BitMask};
use crate::engine::tensor::{Sign, Tensor};
use crate::error::Result;
use crate::gpu::GpuContext;

impl SavedActivations {
    /// A store that keeps nothing and records what a forward saves ([`Self::take_plan_items`]).
    pub fn recorder() -> Self {
        SavedActivations { recording: Some(Vec::new()), ..Default::default() }
    }

    /// What a [`Self::recorder`] saw, in save order.
    pub fn take_plan_items(&mut self) -> Vec<PlanItem> {
        self.recording.take().unwrap_or_default().into_iter().map(|r| r.0).collect()
    }

    /// The step plan's per-tensor budgets, used where the controller has set none.
    pub fn set_plan_budgets(&mut self, budgets: HashMap<String, f64>) {
        self.plan_budgets = budgets;
    }

    /// A store with `other`'s policy and budgets (the probe's compressed pass).
    pub fn like(other: &SavedActivations) -> Result<Self> {
        let mut s = Self::with_policy(other.policy.clone())?;
        s.budgets = other.budgets.clone();
        s.plan_budgets = other.plan_budgets.clone();
        Ok(s)
    }

    /// The budget of tensor `name`: the controller's, else the plan's, else the policy's.
    pub(super) fn budget_of(&self, name: &str, policy: f64) -> f64 {
        self.budgets.get(name).or_else(|| self.plan_budgets.get(name)).copied().unwrap_or(policy)
    }

    /// Makes the store compress what a `batch`-image step compresses while it sees `seen` images
    /// (the probe's sub-batch): tensors are judged by their size scaled to the whole batch.
    pub fn set_batch_share(&mut self, batch: usize, seen: usize) {
        self.share = Some((batch, seen.max(1)));
    }

    /// Whether a dense tensor of `shape` is compressed here ([`compressible`] at batch scale).
    pub(super) fn compresses_shape(&self, shape: &[usize]) -> bool {
        let scaled = match self.share {
            Some((batch, seen)) if shape.len() == 4 => {
                let mut s = shape.to_vec();
                s[0] = s[0] * batch / seen;
                s
            }
            _ => shape.to_vec(),
        };
        self.policy.is_some() && compressible(&scaled)
    }

    /// Budgets (bits per value) by saved-tensor name, overriding the policy's budget for those
    /// tensors (the controller's per-layer allocation). Fixed-bit policies ignore them.
    pub fn set_budgets(&mut self, budgets: HashMap<String, f64>) {
        self.budgets = budgets;
    }

    /// The per-tensor budgets in force.
    pub fn budgets(&self) -> &HashMap<String, f64> {
        &self.budgets
    }

    /// The policy for the tensor `name`: the store's, with its per-layer budget where set, less
    /// the bit per value of an own zero mask.
    pub(super) fn policy_for(&self, name: &str, own_mask: bool) -> Option<Policy> {
        let mut p = self.policy.clone()?;
        if let Policy::Fdsr(c) = &mut p {
            if let BitChoice::Budget(b) = &mut c.bits {
                *b = self.budget_of(name, *b) - if own_mask { 1.0 } else { 0.0 };
            }
        }
        Some(p)
    }

    /// The zero mask a mask-aware policy keeps for `t` (named `name`), and whether it is the
    /// tensor's own (not the ReLU's); `None` where the policy is not mask-aware, the sign of `t`
    /// is unknown, the policy keeps no own masks (`,mask`), or an own mask would leave the codec less than [`MIN_CODEC_BUDGET`] of the
    /// tensor's budget (the budget is a bound: the tensor is then stored without one).
    pub(super) fn mask_for(
        &self,
        ctx: &GpuContext,
        enc: &mut wgpu::CommandEncoder,
        t: &Tensor,
        name: &str,
    ) -> Result<Option<(BitMask, bool)>> {
        let Some(Policy::Fdsr(c)) = &self.policy else { return Ok(None) };
        let room = match c.bits {
            BitChoice::Budget(b) => self.budget_of(name, b) - 1.0 >= MIN_CODEC_BUDGET,
            BitChoice::Fixed(_) => true,
        };
        Ok(match t.sign() {
            _ if !c.mask_aware => None,
            Sign::Any => None,
            Sign::Masked(words) => Some((BitMask { words: (**words).clone(), len: t.numel() }, false)),
            Sign::NonNegative if room && c.own_masks => Some((ops::positive_mask(ctx, enc, t)?, true)),
            Sign::NonNegative => None,
        })
    }
}
