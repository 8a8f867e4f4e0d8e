//! What `fdsr train` writes into its metrics file: the file itself and the JSON of memory,
//! saved activations, transfers, per-tensor records and controller decisions.

use std::io::Write;
use std::path::Path;

use fdsr::engine::controller::Decision;
use fdsr::engine::saved::{SavedStats, TensorRecord};
use fdsr::gpu::{TransferCounts, CATEGORIES};
use fdsr::{FdsrError, GpuContext, Result};
use serde_json::{json, Value};

/// The optional JSONL metrics file.
pub(super) struct MetricsFile(Option<std::fs::File>);

impl MetricsFile {
    pub(super) fn open(path: Option<&Path>, append: bool) -> Result<MetricsFile> {
        let Some(path) = path else { return Ok(MetricsFile(None)) };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(path)
            .map_err(|source| FdsrError::Io { path: path.display().to_string(), source })?;
        Ok(MetricsFile(Some(file)))
    }
    pub(super) fn is_open(&self) -> bool {
        self.0.is_some()
    }
    pub(super) fn write(&mut self, v: &Value) -> Result<()> {
        if let Some(f) = &mut self.0 {
            writeln!(f, "{v}").map_err(|source| FdsrError::Io { path: "metrics file".into(), source })?;
        }
        Ok(())
    }
}

pub(super) fn memory(ctx: &GpuContext) -> Value {
    let r = ctx.pool.report();
    let live: serde_json::Map<String, Value> =
        CATEGORIES.iter().map(|&c| (c.name().into(), json!(r.live_of(c)))).collect();
    let peak: serde_json::Map<String, Value> =
        CATEGORIES.iter().map(|&c| (c.name().into(), json!(r.peak_of(c)))).collect();
    json!({ "live": live, "peak": peak, "peak_total": r.peak_total })
}

pub(super) fn saved_json(s: &SavedStats) -> Value {
    json!({ "tensors": s.tensors, "fp32_bytes": s.fp32_bytes, "stored_bytes": s.stored_bytes,
        "reserved_bytes": s.reserved_bytes, "packed_bytes": s.packed_bytes, "activation_ratio": s.ratio(),
        "used_ratio": s.used_ratio(), "reuse_hits": s.reuse_hits, "reuse_eligible": s.reuse_eligible,
        "reuse_hit_rate": s.reuse_hit_rate() })
}

/// Transfers of `steps` training steps, per step.
pub(super) fn transfers_json(t: &TransferCounts, steps: u64) -> Value {
    let per = |v: u64| v as f64 / steps.max(1) as f64;
    json!({ "uploaded_bytes": per(t.uploaded), "read_back_bytes": per(t.read_back), "host_waits": per(t.host_waits),
        "dispatches": per(t.dispatches), "submits": per(t.submits) })
}

pub(super) fn record_json(r: &TensorRecord) -> Value {
    json!({ "name": r.name, "layer": r.layer, "shape": r.shape, "fp32_bytes": r.fp32_bytes,
        "stored_bytes": r.stored_bytes, "reserved_bytes": r.reserved_bytes, "form": r.form, "bits": r.bits, "budget": r.budget, "own_mask": r.own_mask,
        "classes": { "zero": r.classes[0], "dc_only": r.classes[1], "full": r.classes[2], "reference": r.classes[3] },
        "band_energy": r.band_energy, "reuse_hits": r.reuse_hits, "reuse_eligible": r.reuse_eligible,
        "derived_from": r.derived_from })
}

pub(super) fn decision_json(d: &Decision) -> Value {
    let budgets: serde_json::Map<String, Value> = d.budgets.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let errors: serde_json::Map<String, Value> = d.per_weight.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({ "kind": "controller", "step": d.step, "grad_error": d.grad_error, "budget_before": d.budget_before,
        "budget": d.budget, "budgets": budgets, "weight_errors": errors })
}
