//! A step's budget plan: from what a step saves (names, shapes, kinds — recorded by a one-image
//! forward and scaled to the batch), the per-tensor budgets under which everything the step
//! holds — compressed regions with their headers, own masks, ReLU masks and pooling indices,
//! tensors kept exact — stays at or under `budget` bits per value of the step's dense
//! activations, i.e. fp32 bytes / (32 / budget). Tensors recomputed from others count among the
//! dense activations (`none` holds them) and hold nothing. A budget the data cannot meet is an
//! error that names what takes the room and the largest ratio reachable.

use std::collections::HashMap;

use super::{compressible, Kind};
use crate::codec::resident::layout::fdsr_least_bits;
use crate::error::{FdsrError, Result};

/// Bytes a compressed tensor's segment may take beyond its budget: the region's header (64),
/// the pool's rounding to 256 bytes, and an own mask's last word.
pub const SEGMENT_OVERHEAD_BYTES: u64 = 64 + 255 + 4;

/// One tensor a step saves, as the one-image forward saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanItem {
    /// Saved-tensor name (`layer2.conv.input`).
    pub name: String,
    /// Shape at one image (dimension 0 scales with the batch).
    pub shape: Vec<usize>,
    /// Dense activation or packed mask/index.
    pub kind: Kind,
    /// A second save of a tensor already saved in the same group (stored once).
    pub alias: bool,
    /// Recomputed from another saved tensor ([`super::Derivation`]): counted in the step's fp32
    /// bytes, nothing stored.
    pub derived: bool,
}

/// The per-tensor budgets of a step and their average over the compressed values.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Bits per value (an own mask included) of each compressed tensor.
    pub budgets: HashMap<String, f64>,
    /// `Σ n_l·b_l / Σ n_l` over the compressed tensors.
    pub average: f64,
}

fn scaled(shape: &[usize], batch: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    if let Some(d) = s.first_mut() {
        *d *= batch;
    }
    s
}

/// The plan of `items` at `batch` images under `budget` bits per dense value (`label` is the
/// policy, for the error), on a device binding `max_binding` bytes.
pub fn plan(items: &[PlanItem], batch: usize, budget: f64, max_binding: u64, label: &str) -> Result<Plan> {
    let (mut dense_values, mut fixed) = (0u64, 0u64);
    let mut largest_fixed: Option<(&str, u64)> = None;
    let mut compressed = Vec::new();
    for it in items.iter().filter(|i| !i.alias) {
        let shape = scaled(&it.shape, batch);
        let numel = shape.iter().product::<usize>() as u64;
        let bytes = match it.kind {
            Kind::Packed => numel * 4,
            Kind::Dense if it.derived && compressible(&shape) => {
                dense_values += numel;
                continue;
            }
            Kind::Dense if compressible(&shape) => {
                dense_values += numel;
                let (least, segs) = fdsr_least_bits(&shape, max_binding)?;
                compressed.push((it.name.as_str(), numel, least, segs));
                continue;
            }
            Kind::Dense => {
                dense_values += numel;
                numel * 4
            }
        };
        fixed += bytes;
        if largest_fixed.is_none_or(|l| bytes > l.1) {
            largest_fixed = Some((&it.name, bytes));
        }
    }
    let values: u64 = compressed.iter().map(|c| c.1).sum();
    let overhead: u64 = compressed.iter().map(|c| c.3 * SEGMENT_OVERHEAD_BYTES).sum();
    let need: u64 = compressed.iter().map(|c| c.2).sum();
    let avail = budget * dense_values as f64 - 8.0 * (fixed + overhead) as f64;
    if values == 0 || avail < need as f64 {
        let least_bytes = fixed + overhead + need.div_ceil(8);
        let (tname, tbits) = compressed
            .iter()
            .map(|c| (c.0, c.2 as f64 / c.1 as f64))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or(("none", 0.0));
        let (fname, fbytes) = largest_fixed.unwrap_or(("none", 0));
        return Err(FdsrError::InvalidConfig(format!(
            "{label} cannot be met at batch {batch}: masks, pooling indices and exact tensors take {fixed} bytes \
             (largest: {fname}, {fbytes} bytes) and the compressed tensors' metadata {} more (most per value: \
             {tname}, {tbits:.2} bits); the largest ratio reachable is {:.2}",
            need.div_ceil(8) + overhead,
            (4 * dense_values) as f64 / least_bytes.max(1) as f64
        )));
    }
    let extra = (avail - need as f64) / values as f64;
    let budgets = compressed.iter().map(|c| (c.0.to_string(), c.2 as f64 / c.1 as f64 + extra)).collect();
    Ok(Plan { budgets, average: avail / values as f64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, shape: &[usize], kind: Kind) -> PlanItem {
        PlanItem { name: name.into(), shape: shape.to_vec(), kind, alias: false, derived: false }
    }

    #[test]
    fn the_plan_keeps_the_step_under_its_budget() {
        let items = [
            item("conv1.input", &[1, 1, 32, 32], Kind::Dense),
            item("bn1.input", &[1, 16, 32, 32], Kind::Dense),
            item("conv2.input", &[1, 64, 8, 8], Kind::Dense),
            item("relu1.mask", &[512], Kind::Packed),
            item("fc.input", &[1, 64], Kind::Dense),
        ];
        let p = plan(&items, 64, 2.0, 1 << 27, "fdsr:ratio=16").unwrap();
        let dense = 64 * (1024 + 16 * 1024 + 64 * 64 + 64) as u64;
        let n = |k: &str| {
            64.0 * [1024.0, 16.0 * 1024.0, 64.0 * 64.0]
                [["conv1.input", "bn1.input", "conv2.input"].iter().position(|x| *x == k).unwrap()]
        };
        let held: f64 = p.budgets.iter().map(|(k, b)| b * n(k) / 8.0 + SEGMENT_OVERHEAD_BYTES as f64).sum::<f64>()
            + (64 * 512 * 4 + 64 * 64 * 4) as f64;
        assert!(held <= dense as f64 * 2.0 / 8.0 + 1e-6, "{held} over the budget");
        assert!(p.average > 1.0 && p.average < 2.0, "masks and exact tensors take their share: {p:?}");
        assert!(p.budgets["conv2.input"] > p.budgets["bn1.input"], "more metadata per value: {p:?}");
        let e = plan(&items, 64, 0.2, 1 << 27, "fdsr:ratio=160").unwrap_err().to_string();
        assert!(e.contains("relu1.mask") && e.contains("largest ratio reachable"), "{e}");
    }
}
