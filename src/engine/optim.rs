//! Optimizers (SGD with momentum, AdamW) over a model's parameters, and learning-rate schedules.

use std::fmt;
use std::str::FromStr;

mod arena;

pub use arena::{ParamArena, Slot};

use super::model::Model;
use super::ops;
use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;

/// Which optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptKind {
    /// SGD with (Nesterov) momentum and weight decay.
    Sgd,
    /// AdamW (decoupled weight decay).
    AdamW,
}

impl FromStr for OptKind {
    type Err = FdsrError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "sgd" => Ok(OptKind::Sgd),
            "adamw" => Ok(OptKind::AdamW),
            _ => Err(FdsrError::InvalidConfig(format!("unknown optimizer '{s}' (expected sgd or adamw)"))),
        }
    }
}

impl fmt::Display for OptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptKind::Sgd => "sgd",
            OptKind::AdamW => "adamw",
        })
    }
}

/// Learning-rate schedule over the whole run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Schedule {
    /// The base rate throughout.
    Constant,
    /// `lr · (1 + cos(π · step / total)) / 2`.
    Cosine,
    /// `lr · gamma^⌊epoch / every⌋`.
    Step {
        /// Epochs between decays.
        every: usize,
        /// Factor per decay.
        gamma: f32,
    },
}

impl FromStr for Schedule {
    type Err = FdsrError;
    /// `constant`, `cosine`, or `step:EVERY[:GAMMA]` (gamma 0.1 by default).
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            FdsrError::InvalidConfig(format!(
                "unknown schedule '{s}' (expected constant, cosine or step:EPOCHS[:GAMMA])"
            ))
        };
        let mut parts = s.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("constant"), None, ..) => Ok(Schedule::Constant),
            (Some("cosine"), None, ..) => Ok(Schedule::Cosine),
            (Some("step"), Some(e), g, None) => {
                let every: usize = e.parse().map_err(|_| bad())?;
                let gamma: f32 = g.map_or(Ok(0.1), |g| g.parse().map_err(|_| bad()))?;
                if every == 0 || !(gamma.is_finite() && gamma > 0.0) {
                    return Err(bad());
                }
                Ok(Schedule::Step { every, gamma })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Constant => f.write_str("constant"),
            Schedule::Cosine => f.write_str("cosine"),
            Schedule::Step { every, gamma } => write!(f, "step:{every}:{gamma}"),
        }
    }
}

impl Schedule {
    /// The rate at `step` (0-based) of `total` steps, in epoch `epoch`.
    pub fn lr(&self, base: f32, step: u64, total: u64, epoch: usize) -> f32 {
        match *self {
            Schedule::Constant => base,
            Schedule::Cosine => {
                let t = step as f64 / total.max(1) as f64;
                (f64::from(base) * 0.5 * (1.0 + (std::f64::consts::PI * t.min(1.0)).cos())) as f32
            }
            Schedule::Step { every, gamma } => base * gamma.powi((epoch / every) as i32),
        }
    }
}

/// Optimizer hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptConfig {
    /// Which optimizer.
    pub kind: OptKind,
    /// SGD momentum.
    pub momentum: f32,
    /// Nesterov momentum (SGD).
    pub nesterov: bool,
    /// Weight decay (L2 for SGD, decoupled for AdamW), on conv and linear weights only.
    pub weight_decay: f32,
    /// AdamW β1.
    pub beta1: f32,
    /// AdamW β2.
    pub beta2: f32,
    /// AdamW ε.
    pub eps: f32,
}

impl OptConfig {
    /// Defaults for `kind`: SGD momentum 0.9 (Nesterov), decay 5e-4; AdamW (0.9, 0.999), 1e-8, decay 0.05.
    pub fn defaults(kind: OptKind) -> Self {
        let weight_decay = if kind == OptKind::Sgd { 5e-4 } else { 0.05 };
        OptConfig { kind, momentum: 0.9, nesterov: true, weight_decay, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }
}

/// Optimizer state: one or two tensors per trainable parameter, views of the [`ParamArena`] that
/// also holds the parameters and their gradients, so a step is one dispatch over all of them.
pub struct Optimizer {
    /// Hyper-parameters.
    pub config: OptConfig,
    /// Per trainable parameter, in the model's visit order: (name, first state, second state for
    /// AdamW), views of the arena's state buffers.
    pub state: Vec<(String, Tensor, Option<Tensor>)>,
    /// Updates applied so far (AdamW's bias correction).
    pub steps: u64,
    arena: ParamArena,
}

impl Optimizer {
    /// Zero state for every trainable parameter of `model`, whose parameters and gradients move
    /// into the optimizer's arena (the model keeps views of it; values are kept).
    pub fn new(ctx: &GpuContext, model: &mut Model, config: OptConfig) -> Result<Self> {
        let arena = ParamArena::pack(ctx, model, config.kind == OptKind::AdamW)?;
        let state = arena
            .slots
            .iter()
            .map(|slot| {
                let first = arena.view(&arena.first, slot)?;
                let second = arena.second.as_ref().map(|t| arena.view(t, slot)).transpose()?;
                Ok((slot.name.clone(), first, second))
            })
            .collect::<Result<_>>()?;
        Ok(Optimizer { config, state, steps: 0, arena })
    }

    /// The arena of parameters, gradients and state.
    pub fn arena(&self) -> &ParamArena {
        &self.arena
    }

    /// Records one update of every trainable parameter with learning rate `lr`: one dispatch,
    /// whatever the number of parameters. `model` must be the one the optimizer was built for.
    pub fn step(&mut self, ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, model: &mut Model, lr: f32) -> Result<()> {
        self.arena.check(model)?;
        self.steps += 1;
        let (c, a) = (self.config, &self.arena);
        match (c.kind, &a.second) {
            (OptKind::Sgd, _) => {
                let sp =
                    ops::SgdParams { lr, momentum: c.momentum, weight_decay: c.weight_decay, nesterov: c.nesterov };
                ops::optim::sgd_step_split(ctx, enc, (&a.values, &a.grads, Some(&a.first)), sp, a.decayed)
            }
            (OptKind::AdamW, Some(second)) => {
                let ap = ops::AdamParams {
                    lr,
                    beta1: c.beta1,
                    beta2: c.beta2,
                    eps: c.eps,
                    weight_decay: c.weight_decay,
                    step: u32::try_from(self.steps).unwrap_or(u32::MAX),
                };
                ops::optim::adamw_step_split(ctx, enc, [&a.values, &a.grads, &a.first, second], ap, a.decayed)
            }
            (OptKind::AdamW, None) => Err(FdsrError::InvalidConfig("AdamW state is incomplete".into())),
        }
    }
}
