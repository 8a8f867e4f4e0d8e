//! Reuse benchmark (native): per tensor and policy, similarity reuse off against on, measured
//! side by side in one run: hit rate, candidates, stored bytes, error, compress and decompress time.

use super::activations::errors;
use super::quality::Sample;
use crate::codec::api::{compress_buffer_with_stats, decompress};
use crate::codec::config::{CodecOptions, Policy, ReuseConfig};
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::storage_init;
use crate::gpu::GpuContext;
use crate::reference::reuse::ReuseStats;
use std::time::Instant;

/// One (tensor, policy, reuse) measurement.
#[derive(Clone, Debug)]
pub struct ReuseRow {
    /// Tensor name.
    pub sample: String,
    /// Policy measured (with or without `,reuse`).
    pub policy: String,
    /// Reuse statistics (`None` with reuse off).
    pub stats: Option<ReuseStats>,
    /// Serialized bytes.
    pub stored_bytes: usize,
    /// Relative L2 error of the decoded tensor.
    pub rel_l2: f64,
    /// Median compress seconds (upload excluded).
    pub compress_s: f64,
    /// Median decompress seconds.
    pub decompress_s: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `policy` with reuse on (default settings).
pub fn with_reuse(policy: &Policy) -> Result<Policy> {
    match policy {
        Policy::Fdsr(c) => {
            Ok(Policy::Fdsr(crate::codec::config::FdsrConfig { reuse: Some(ReuseConfig::default()), ..c.clone() }))
        }
        p => Err(FdsrError::InvalidConfig(format!("reuse applies to fdsr policies, not {p}"))),
    }
}

/// Measures every sample with every policy, reuse off then on, `reps` timed runs after a warm-up.
pub async fn measure(ctx: &GpuContext, samples: &[Sample], policies: &[Policy], reps: usize) -> Result<Vec<ReuseRow>> {
    let mut rows = Vec::new();
    let opts = CodecOptions::default();
    for s in samples {
        let input = storage_init(ctx, "bench input", bytemuck::cast_slice(&s.data));
        for base in policies {
            for p in [base.clone(), with_reuse(base)?] {
                let (mut comp, mut decomp) = (Vec::new(), Vec::new());
                let mut last = None;
                for i in 0..=reps.max(1) {
                    let t = Instant::now();
                    let (c, st) = compress_buffer_with_stats(ctx, &input, &s.shape, &p, &opts).await?;
                    let st = st.reuse;
                    let tc = t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    let y = decompress(ctx, &c).await?;
                    let td = t.elapsed().as_secs_f64();
                    if i > 0 {
                        comp.push(tc);
                        decomp.push(td);
                    }
                    last = Some((c, st, y));
                }
                let Some((c, stats, y)) = last else { continue };
                rows.push(ReuseRow {
                    sample: s.name.clone(),
                    policy: p.to_string(),
                    stats,
                    stored_bytes: c.stored_bytes(),
                    rel_l2: errors(&s.data, &y).0,
                    compress_s: median(comp),
                    decompress_s: median(decomp),
                });
            }
        }
    }
    Ok(rows)
}

/// The rows as a markdown table; each reuse-on row also shows bytes and times relative to the
/// row before it (the same policy with reuse off).
pub fn markdown(rows: &[ReuseRow]) -> String {
    let mut s = String::from(
        "| tensor | policy | hit rate | hits / candidates / rejected | stored bytes | bytes on/off | rel. L2 | compress ms | decompress ms | compress on/off | decompress on/off |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut prev: Option<&ReuseRow> = None;
    for r in rows {
        let (rate, counts, rel) = match (&r.stats, prev) {
            (Some(st), Some(off)) => (
                format!("{:.1}%", 100.0 * st.hit_rate()),
                format!("{} / {} / {}", st.hits, st.candidates, st.rejected),
                Some(off),
            ),
            _ => ("—".into(), "—".into(), None),
        };
        let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.3}", a / b) } else { "—".into() };
        let (b, c, d) = rel.map_or(("—".into(), "—".into(), "—".into()), |o| {
            (
                ratio(r.stored_bytes as f64, o.stored_bytes as f64),
                ratio(r.compress_s, o.compress_s),
                ratio(r.decompress_s, o.decompress_s),
            )
        });
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {:.4} | {:.2} | {:.2} | {} | {} |\n",
            r.sample,
            r.policy,
            rate,
            counts,
            r.stored_bytes,
            b,
            r.rel_l2,
            r.compress_s * 1e3,
            r.decompress_s * 1e3,
            c,
            d
        );
        prev = Some(r);
    }
    s
}
