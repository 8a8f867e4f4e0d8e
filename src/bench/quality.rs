//! Quality benchmark: stored ratio and reconstruction error of every policy on realistic tensors.

use super::activations::errors;
use crate::codec::api::{compress, decompress};
use crate::codec::config::{CodecOptions, Policy};
use crate::error::Result;
use crate::gpu::GpuContext;

/// A named test tensor.
pub struct Sample {
    /// Description shown in the table.
    pub name: String,
    /// Shape (NCHW).
    pub shape: Vec<usize>,
    /// Values.
    pub data: Vec<f32>,
}

/// One measured (tensor, policy) pair.
#[derive(Clone, Debug)]
pub struct QualityRow {
    /// Tensor name.
    pub sample: String,
    /// Policy as given.
    pub policy: String,
    /// Stored policy (e.g. bits chosen under a budget).
    pub stored_as: String,
    /// fp32 bytes / stored bytes (serialized, metadata included).
    pub ratio: f64,
    /// Stored bits per value.
    pub bits_per_value: f64,
    /// Relative L2 error of the decoded tensor.
    pub rel_l2: f64,
    /// Largest absolute error.
    pub max_abs: f64,
}

/// The policies of the table.
pub fn default_policies() -> Vec<Policy> {
    [
        "lossless",
        "uniform:2",
        "uniform:4",
        "uniform:8",
        "division",
        "fdsr:budget=1",
        "fdsr:budget=2",
        "fdsr:budget=3",
        "fdsr:budget=4",
    ]
    .iter()
    .filter_map(|s| s.parse().ok())
    .collect()
}

/// Compresses and decompresses every sample with every policy on `ctx`.
pub async fn measure(ctx: &GpuContext, samples: &[Sample], policies: &[Policy], seed: u32) -> Result<Vec<QualityRow>> {
    let mut rows = Vec::new();
    for s in samples {
        for p in policies {
            let opts = CodecOptions { seed, ..Default::default() };
            let c = compress(ctx, &s.data, &s.shape, p, &opts).await?;
            let y = decompress(ctx, &c).await?;
            let (rel_l2, max_abs) = errors(&s.data, &y);
            let stored = c.stored_bytes();
            rows.push(QualityRow {
                sample: s.name.clone(),
                policy: p.to_string(),
                stored_as: c.policy_name(),
                ratio: c.ratio(),
                bits_per_value: stored as f64 * 8.0 / s.data.len() as f64,
                rel_l2,
                max_abs,
            });
        }
    }
    Ok(rows)
}

/// The rows as a markdown table.
pub fn markdown(rows: &[QualityRow]) -> String {
    let mut s = String::from(
        "| tensor | policy | stored as | ratio | bits/value | rel. L2 error | max abs error |\n|---|---|---|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {:.2}x | {:.3} | {:.4} | {:.4} |\n",
            r.sample, r.policy, r.stored_as, r.ratio, r.bits_per_value, r.rel_l2, r.max_abs
        );
    }
    s
}
