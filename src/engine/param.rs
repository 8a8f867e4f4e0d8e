//! Trainable parameters and persistent buffers (batch-norm running statistics), with seeded
//! initialization on the host.

use super::tensor::Tensor;
use crate::data::synthetic::SplitMix64;
use crate::error::Result;
use crate::gpu::{Category, GpuContext};

/// How a parameter starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Init {
    /// Kaiming (He) normal for ReLU networks: N(0, 2 / fan_in).
    KaimingNormal {
        /// Inputs per output.
        fan_in: usize,
    },
    /// U(-1/√fan_in, 1/√fan_in), PyTorch's default for linear layers.
    Uniform {
        /// Inputs per output.
        fan_in: usize,
    },
    /// Every value `v`.
    Constant(f32),
}

impl Init {
    /// `n` values drawn from this initialization with `rng`.
    pub fn values(self, n: usize, rng: &mut SplitMix64) -> Vec<f32> {
        match self {
            Init::KaimingNormal { fan_in } => {
                let std = (2.0 / fan_in.max(1) as f64).sqrt();
                (0..n).map(|_| (normal(rng) * std) as f32).collect()
            }
            Init::Uniform { fan_in } => {
                let b = 1.0 / (fan_in.max(1) as f32).sqrt();
                (0..n).map(|_| rng.range(-b, b)).collect()
            }
            Init::Constant(v) => vec![v; n],
        }
    }
}

/// A standard normal sample (Box–Muller, host side).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = (f64::from(rng.next_f32()) + 1e-7).min(1.0);
    let u2 = f64::from(rng.next_f32());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A named tensor of the model: trainable (with a gradient) or a buffer (without).
pub struct Param {
    /// Unique name, e.g. `features.0.weight` (checkpoint key).
    pub name: String,
    /// The values (counted as weights).
    pub value: Tensor,
    /// The gradient, written by backward (trainable parameters only).
    pub grad: Option<Tensor>,
    /// Whether weight decay applies (not to biases and batch-norm parameters).
    pub decay: bool,
}

impl Param {
    /// A trainable parameter of `shape` initialized with `init` from `rng`.
    pub fn trainable(
        ctx: &GpuContext,
        name: String,
        shape: &[usize],
        init: Init,
        decay: bool,
        rng: &mut SplitMix64,
    ) -> Result<Param> {
        let n = shape.iter().product();
        let value = Tensor::from_slice(ctx, &init.values(n, rng), shape, Category::Weights)?;
        let grad = Tensor::from_slice(ctx, &vec![0.0; n], shape, Category::Gradients)?;
        Ok(Param { name, value, grad: Some(grad), decay })
    }

    /// A buffer (no gradient) of `shape` filled with `v`.
    pub fn buffer(ctx: &GpuContext, name: String, shape: &[usize], v: f32) -> Result<Param> {
        let n = shape.iter().product();
        let value = Tensor::from_slice(ctx, &vec![v; n], shape, Category::Weights)?;
        Ok(Param { name, value, grad: None, decay: false })
    }

    /// The gradient tensor, or an error naming a buffer that has none.
    pub fn grad(&self) -> Result<&Tensor> {
        self.grad.as_ref().ok_or_else(|| {
            crate::error::FdsrError::InvalidConfig(format!("{} is a buffer and has no gradient", self.name))
        })
    }
}
