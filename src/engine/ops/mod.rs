//! The engine's ops besides the matrix products, each with its forward and backward recorded into
//! a command encoder: ReLU with a 1-bit mask, residual add, max-pool 2×2 with 2-bit indices,
//! global average pool, batch norm 2-D, softmax cross-entropy, the optimizer steps and the fake
//! quantization of quantized-compute simulation with the gates of DFQ, and the sums of the
//! gradient-error probe.
//!
//! The state an op saves for its backward is explicit in its return value ([`BitMask`],
//! [`PoolIndex`], [`BnSaved`], [`LossOut`]): that is where compression plugs in. Every kernel is
//! deterministic (same inputs, same bits; reductions in a fixed order, no float atomics).

pub mod batchnorm;
pub mod compare;
pub mod elementwise;
pub mod fakequant;
pub mod gate;
pub mod loss;
pub mod optim;
pub mod pool;

pub use batchnorm::{
    batchnorm_backward, batchnorm_eval_forward, batchnorm_reapply, batchnorm_recalibrate_forward,
    batchnorm_train_forward, BnParams, BnSaved, BN_MOMENTUM,
};
pub use elementwise::{add, add_into, add_relu, mask_clamp, positive_mask, relu_backward, relu_forward, BitMask};
pub use fakequant::{fake_quant, min_max, quantize, Bits};
pub use gate::{gate_backward, gate_forward, GateState};
pub use loss::{accumulate_metrics, cross_entropy_backward, cross_entropy_forward, upload_labels, Labels, LossOut};
pub use optim::{adamw_step, sgd_step, AdamParams, SgdParams};
pub use pool::{avgpool_backward, avgpool_forward, maxpool2_backward, maxpool2_forward, maxpool2_gather, PoolIndex};

use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

/// Invocations per workgroup of every elementwise kernel.
pub(crate) const WG: usize = 256;

/// Workgroups covering `n` invocations, or an error when `n` does not fit the u32 indexing.
pub(crate) fn groups(n: usize, what: &str) -> Result<u32> {
    if n as u64 >= u64::from(u32::MAX) - 64 {
        return Err(FdsrError::InvalidTensor(format!("{what}: {n} values exceed the 2^32 a kernel indexes")));
    }
    Ok(n.div_ceil(WG) as u32)
}

/// The registered variant of a reducing shader (`[plain, subgroup]` names): the one with
/// subgroup sums where the device has subgroups.
pub(crate) fn reducing(ctx: &GpuContext, [plain, subgroup]: [&'static str; 2]) -> &'static str {
    if ctx.has_subgroups() {
        subgroup
    } else {
        plain
    }
}

/// Checks that `t` has exactly `shape`.
pub(crate) fn expect_shape(t: &Tensor, shape: &[usize], what: &str) -> Result<()> {
    if t.shape() != shape {
        return Err(FdsrError::InvalidTensor(format!("{what} has shape {:?}, expected {shape:?}", t.shape())));
    }
    Ok(())
}

/// A 1-value workspace tensor bound where a kernel writes nothing (WebGPU forbids binding one
/// buffer to two writable bindings, so each unused writable binding gets its own).
pub(crate) fn dummy(ctx: &GpuContext) -> Tensor {
    Tensor::uninit(ctx, &[1], Category::Workspace)
}

/// u32 words in a tensor of as many f32 slots, uploaded before the next submitted work.
pub(crate) fn upload_words(ctx: &GpuContext, words: &[u32], category: Category) -> Tensor {
    let t = Tensor::uninit(ctx, &[words.len()], category);
    if !words.is_empty() {
        ctx.write_buffer(t.buffer(), 0, bytemuck::cast_slice(words));
    }
    t
}
