//! `fdsr inspect`: what a stored tensor holds, its bytes by part, and optionally its error.

use clap::Args;
use fdsr::bench::activations::errors;
use fdsr::codec::api;
use fdsr::io::read_npy;
use fdsr::{Body, Compressed, FdsrError, Result, TileClass};
use std::path::PathBuf;

/// Flags of `fdsr inspect`.
#[derive(Args)]
pub struct InspectArgs {
    /// Input .fdsr file.
    input: PathBuf,
    /// The original .npy, to report reconstruction error.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn class_counts(c: &Compressed) -> Option<[usize; 4]> {
    let Body::Fdsr(f) = &c.body else { return None };
    let [n, ch, h, w] = c.shape[..] else { return None };
    let tiles = n * ch * h.div_ceil(8) * w.div_ceil(8);
    let mut counts = [0usize; 4];
    (0..tiles).for_each(|t| counts[f.class(t) as usize] += 1);
    Some(counts)
}

/// Runs the command.
pub fn run(a: &InspectArgs) -> Result<()> {
    let c = super::read_fdsr(&a.input)?;
    let mut obj = serde_json::json!({
        "file": a.input.display().to_string(),
        "format_version": fdsr::codec::format::FORMAT_VERSION,
        "shape": c.shape,
        "policy": c.policy_name(),
        "seed": c.seed,
        "stored_bytes": c.stored_bytes(),
        "fp32_bytes": c.numel() * 4,
        "ratio": c.ratio(),
        "bits_per_value": c.stored_bytes() as f64 * 8.0 / c.numel() as f64,
        "bytes_by_part": c.bytes_by_part().into_iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    if let Body::Fdsr(f) = &c.body {
        obj["band_edges"] = serde_json::json!(f.band_edges);
        obj["bits_per_band"] = serde_json::json!(f.bits);
    }
    if let Some(k) = class_counts(&c) {
        let names = [TileClass::Zero, TileClass::DcOnly, TileClass::Full, TileClass::Reference];
        obj["tile_classes"] =
            names.iter().zip(k).map(|(n, v)| (format!("{n:?}").to_lowercase(), serde_json::json!(v))).collect();
        // Reuse hit rate: references over the tiles that could be references (full + reference).
        let eligible = k[2] + k[3];
        obj["reuse_hit_rate"] = serde_json::json!(if eligible == 0 { 0.0 } else { k[3] as f64 / eligible as f64 });
    }
    if let Some(r) = &a.reference {
        let t = read_npy(r)?;
        if t.shape != c.shape {
            return Err(FdsrError::InvalidTensor(format!(
                "reference shape {:?} differs from stored {:?}",
                t.shape, c.shape
            )));
        }
        let y = pollster::block_on(api::decompress(&super::gpu()?, &c))?;
        let (rel, max) = errors(&t.data, &y);
        obj["rel_l2_error"] = serde_json::json!(rel);
        obj["max_abs_error"] = serde_json::json!(max);
    }
    if a.json {
        println!("{obj}");
    } else if let serde_json::Value::Object(m) = obj {
        for (k, v) in m {
            println!("{k:>16}: {v}");
        }
    }
    Ok(())
}
