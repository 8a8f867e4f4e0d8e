//! Driver of the DFQ gate shaders (`shaders/gate_forward.wgsl`, `shaders/gate_backward.wgsl`),
//! the mirror of `reference::gate`. Everything is recorded into the encoder; nothing is read back.

use super::expect_shape;
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, uniform, Bindable};
use crate::gpu::{Category, GpuContext};

/// The bit options of DFQ's gates and how they train, as the kernels take them.
#[derive(Clone, Debug, PartialEq)]
pub struct DfqPlan {
    /// Forward bits of each option, ascending.
    pub fw: Vec<u32>,
    /// Backward bits of each option.
    pub bw: Vec<u32>,
    /// Cost of each option relative to static fw=8/bw=16 ([`dfq_costs`](crate::engine::precision::bitops::dfq_costs)).
    pub costs: Vec<f32>,
    /// Target of the expected relative cost.
    pub target: f32,
    /// Weight of the cost regularizer.
    pub alpha: f32,
    /// Gumbel-softmax temperature.
    pub tau: f32,
}

/// Mirror of `GateParams` in the gate shaders.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GateParams {
    n: u32,
    c: u32,
    hw: u32,
    k: u32,
    train: u32,
    seed: u32,
    stream: u32,
    per: u32,
    tau: f32,
    goal: f32,
    alpha: f32,
    _a: u32,
    fw: [u32; 4],
    cost: [f32; 4],
}

/// What a gate's forward leaves for its backward: channel means `[N, C]`, option
/// probabilities `[N, K]` and the chosen option of each input (`[N]` u32 words).
#[derive(Clone, Debug)]
pub struct GateState {
    /// Channel means of each input.
    pub means: Tensor,
    /// Softmax of the (noisy) logits over tau.
    pub probs: Tensor,
    /// The chosen option of each input.
    pub choice: Tensor,
}

/// The parameters of a gate call on `x [N, C, …]` with options `d`, after checking shapes.
fn params(x: &Tensor, d: &DfqPlan, noise: Option<(u32, u32)>) -> Result<GateParams> {
    let s = x.shape();
    let k = d.fw.len();
    if s.len() < 2 || s[0] == 0 || s[1] == 0 || !(1..=4).contains(&k) || d.costs.len() != k {
        return Err(FdsrError::InvalidConfig(format!(
            "a DFQ gate takes [N, C, …] inputs and 1 to 4 options with a cost each, got {s:?} and {k} options"
        )));
    }
    let hw = s[2..].iter().product::<usize>();
    let (seed, stream) = noise.unwrap_or((0, 0));
    let mut p = GateParams {
        n: s[0] as u32,
        c: s[1] as u32,
        hw: hw as u32,
        k: k as u32,
        train: u32::from(noise.is_some()),
        seed,
        stream,
        per: (s[1] * hw) as u32,
        tau: d.tau,
        goal: d.target,
        alpha: d.alpha,
        ..Default::default()
    };
    p.fw[..k].copy_from_slice(&d.fw);
    p.cost[..k].copy_from_slice(&d.costs);
    Ok(p)
}

/// Gate forward of `x [N, C, …]` with `weight [K, C]` and `bias [K]`; `noise = Some((seed,
/// stream))` trains (Gumbel noise, and each choice counted into `counts [K]` as u32 words).
#[allow(clippy::too_many_arguments)]
pub fn gate_forward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    counts: &Tensor,
    d: &DfqPlan,
    noise: Option<(u32, u32)>,
) -> Result<GateState> {
    let p = params(x, d, noise)?;
    let (n, c, k) = (p.n as usize, p.c as usize, p.k as usize);
    expect_shape(weight, &[k, c], "gate weight")?;
    expect_shape(bias, &[k], "gate bias")?;
    expect_shape(counts, &[k], "gate counts")?;
    let st = GateState {
        means: Tensor::uninit(ctx, &[n, c], Category::Workspace),
        probs: Tensor::uninit(ctx, &[n, k], Category::Workspace),
        choice: Tensor::uninit(ctx, &[n], Category::Workspace),
    };
    let pb = uniform(ctx, "gate_forward", &p);
    let binds: [&dyn Bindable; 8] = [&pb, &x, &weight, &bias, &st.means, &st.probs, &st.choice, &counts];
    dispatch(ctx, enc, "gate_forward", "gate_forward", &binds, n as u32)?;
    Ok(st)
}

/// Gate backward: from the layer's raw input `x`, the gradient `dx` of its quantized input,
/// the forward's `range` (a `fake_quant::min_max` tensor) and state, writes the gradients of
/// the gate's weight and bias into `wgrad [K, C]` and `bgrad [K]`.
#[allow(clippy::too_many_arguments)]
pub fn gate_backward(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    x: &Tensor,
    dx: &Tensor,
    range: &Tensor,
    st: &GateState,
    d: &DfqPlan,
    wgrad: &Tensor,
    bgrad: &Tensor,
) -> Result<()> {
    let p = params(x, d, None)?;
    let (n, c, k) = (p.n as usize, p.c as usize, p.k as usize);
    expect_shape(dx, x.shape(), "gradient of a gated input")?;
    expect_shape(&st.probs, &[n, k], "gate probabilities")?;
    expect_shape(wgrad, &[k, c], "gate weight gradient")?;
    expect_shape(bgrad, &[k], "gate bias gradient")?;
    let dlogit = Tensor::uninit(ctx, &[n, k], Category::Workspace);
    let pb = uniform(ctx, "gate_backward", &p);
    let binds: [&dyn Bindable; 9] = [&pb, &x, &dx, &range, &st.probs, &st.means, &dlogit, &wgrad, &bgrad];
    dispatch(ctx, enc, "gate_backward", "gate_backward", &binds, n as u32)?;
    dispatch(ctx, enc, "gate_backward", "gate_grad", &binds, 1)
}
