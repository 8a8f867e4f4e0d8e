//! The cross-platform smoke run: one generated activation compressed and decompressed, with
//! results that the native CLI and the browser page report identically (no clocks, no threads).

use super::activations::{conv3x3_relu, errors, smooth_images};
use crate::codec::api::{compress, decompress};
use crate::codec::config::{CodecOptions, Policy};
use crate::error::Result;
use crate::gpu::GpuContext;

/// Shape of the smoke tensor.
pub const SMOKE_SHAPE: [usize; 4] = [2, 4, 32, 32];

/// What one smoke run reports.
#[derive(Clone, Debug)]
pub struct SmokeResult {
    /// Adapter description.
    pub adapter: String,
    /// Policy used.
    pub policy: String,
    /// Stored bytes.
    pub stored_bytes: usize,
    /// fp32 bytes / stored bytes.
    pub ratio: f64,
    /// Relative L2 error.
    pub rel_l2: f64,
    /// Decoded values.
    pub decoded: Vec<f32>,
}

impl SmokeResult {
    /// The result as a JSON object (hand-written: serde_json is native-only).
    pub fn to_json(&self) -> String {
        let vals: Vec<String> = self.decoded.iter().map(|v| format!("{v:e}")).collect();
        format!(
            "{{\"adapter\":{:?},\"policy\":{:?},\"stored_bytes\":{},\"ratio\":{},\"rel_l2\":{},\"decoded\":[{}]}}",
            self.adapter,
            self.policy,
            self.stored_bytes,
            self.ratio,
            self.rel_l2,
            vals.join(",")
        )
    }
}

/// The smoke tensor: smooth images through a 3×3 conv and ReLU.
pub fn smoke_tensor() -> Vec<f32> {
    let [n, c, h, w] = SMOKE_SHAPE;
    conv3x3_relu(&smooth_images(n, h, w, 21), n, h, w, c, 22)
}

/// Compresses and decompresses the smoke tensor with `fdsr:budget=2` and `seed`.
pub async fn run(ctx: &GpuContext, seed: u32) -> Result<SmokeResult> {
    let x = smoke_tensor();
    let policy: Policy = "fdsr:budget=2".parse()?;
    let c = compress(ctx, &x, &SMOKE_SHAPE, &policy, &CodecOptions { seed, ..Default::default() }).await?;
    let decoded = decompress(ctx, &c).await?;
    let (rel_l2, _) = errors(&x, &decoded);
    Ok(SmokeResult {
        adapter: ctx.adapter_description(),
        policy: c.policy_name(),
        stored_bytes: c.stored_bytes(),
        ratio: c.ratio(),
        rel_l2,
        decoded,
    })
}
