//! What another budget would do to a tensor, at once and without a step: the step plan
//! (`fdsr::engine::saved::plan`) shares a budget out over the tensors a step saves — here the
//! last step's records, with their batch-scaled shapes — and the allocation rule
//! (`fdsr::codec::alloc::choose_bits`) picks the bits per band of the tensor's codec budget from
//! the analysis statistics the device recorded for it. At the run's own budget the device's
//! choice is used as it is.

use std::collections::HashMap;

use fdsr::codec::alloc::choose_bits;
use fdsr::engine::saved::plan::{plan, PlanItem};
use fdsr::engine::saved::{Kind, TensorRecord, MIN_CODEC_BUDGET};
use fdsr::rules::config::Policy;

use crate::story::Mask;

/// Bits per band of a tensor and where they come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Bits {
    /// Bits per band.
    pub bits: Vec<u8>,
    /// The tensor's budget (bits per value, an own mask included).
    pub budget: f64,
    /// An own zero mask is kept (1 bit per value of the budget).
    pub own_mask: bool,
    /// `true`: the device chose them in the last step; `false`: chosen here for another budget.
    pub live: bool,
}

/// Per-tensor budgets of the last step's `records` under `budget` bits per dense value.
pub fn tensor_budgets(records: &[TensorRecord], budget: f64, max_binding: u64) -> Result<HashMap<String, f64>, String> {
    let items: Vec<PlanItem> = records
        .iter()
        .map(|r| PlanItem {
            name: r.name.clone(),
            shape: r.shape.clone(),
            kind: if r.form == "packed" { Kind::Packed } else { Kind::Dense },
            alias: false,
            derived: r.form == "derived",
        })
        .collect();
    // The shapes are the step's own (batch included): a plan at batch 1.
    let p = plan(&items, 1, budget, max_binding, &format!("a budget of {budget:.2} bits per value"))
        .map_err(|e| e.to_string())?;
    Ok(p.budgets)
}

/// The bits of `record` under a step budget of `budget` (`run_budget`: the run's own, whose
/// bits the device chose), with `records` the step's other tensors.
pub fn bits_at(
    record: &TensorRecord,
    records: &[TensorRecord],
    budget: f64,
    run_budget: f64,
    max_binding: u64,
) -> Result<Bits, String> {
    if record.bits.is_empty() {
        return Err(format!("{} is stored as {}: no bands", record.name, record.form));
    }
    if (budget - run_budget).abs() < 1e-9 {
        let b = record.budget.unwrap_or(budget) + if record.own_mask { 1.0 } else { 0.0 };
        return Ok(Bits { bits: record.bits.clone(), budget: b, own_mask: record.own_mask, live: true });
    }
    let stats = record.analysis.as_ref().ok_or_else(|| format!("{} has no analysis statistics", record.name))?;
    let budgets = tensor_budgets(records, budget, max_binding)?;
    let b = *budgets.get(&record.name).ok_or_else(|| format!("the plan has no budget for {}", record.name))?;
    let own_mask = record.own_mask && b - 1.0 >= MIN_CODEC_BUDGET;
    let codec = b - if own_mask { 1.0 } else { 0.0 };
    let bits = choose_bits(stats, codec).map_err(|e| format!("{}: {e}", record.name))?;
    Ok(Bits { bits, budget: b, own_mask, live: false })
}

/// What the store re-applies to `record`'s tensor at `bits`: a zero mask where the live step
/// re-applied one (the ReLU's, or an own mask that `bits` still leaves room for) and the values
/// are ≥ 0 (`nonnegative`); with a clamp at 0 under `,mask=clamp`.
pub fn mask(record: &TensorRecord, bits: &Bits, nonnegative: bool) -> Mask {
    if !(record.masked && nonnegative && (bits.own_mask || !record.own_mask)) {
        return Mask::None;
    }
    match record.form.parse::<Policy>() {
        Ok(Policy::Fdsr(c)) if c.mask_clamp => Mask::Clamp,
        _ => Mask::Zeros,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdsr::codec::alloc::{stored_bits, FdsrStats};

    fn record(name: &str, shape: &[usize], form: &str) -> TensorRecord {
        let numel = shape.iter().product::<usize>() as u64;
        let mut r = TensorRecord::kept(name, 1, shape, numel * 4, form);
        if form.starts_with("fdsr") {
            let mut s = FdsrStats::new(&[0, 1, 6, 28, 64]);
            s.numel = numel;
            s.planes = (shape[0] * shape[1]) as u64;
            s.full_tiles = numel / 64;
            for j in 1..4 {
                s.band_sum_n_max2[j] = 1e4 / (1u64 << (2 * j)) as f64;
                s.band_energy[j] = 1e3 / (1u64 << j) as f64;
            }
            s.dc_sum_n_max2 = 1e4;
            r.analysis = Some(s);
            r.bits = vec![8, 4, 2, 0];
            r.budget = Some(3.0);
            r.masked = form.contains("mask");
        }
        r
    }

    fn step() -> Vec<TensorRecord> {
        vec![
            record("layer1.bn.input", &[16, 8, 32, 32], "fdsr:budget=4,mask,grad"),
            record("relu3.mask", &[4096], "packed"),
            record("layer2.conv.input", &[16, 8, 16, 16], "fdsr:budget=4,mask,grad"),
            record("fc.input", &[16, 1024], "fp32"),
        ]
    }

    #[test]
    fn the_run_budget_keeps_the_device_bits_and_others_fit_their_share() {
        let recs = step();
        let live = bits_at(&recs[0], &recs, 4.0, 4.0, 1 << 27).unwrap();
        assert!(live.live && live.bits == [8, 4, 2, 0]);
        let stats = recs[0].analysis.as_ref().unwrap();
        let mut last = 0;
        for budget in [5.0, 6.0, 8.0] {
            let b = bits_at(&recs[0], &recs, budget, 4.0, 1 << 27).unwrap();
            assert!(!b.live);
            let used = stored_bits(stats, &b.bits);
            assert!(used as f64 <= b.budget * stats.numel as f64, "{b:?}");
            assert!(used >= last, "more budget, no fewer bits: {b:?}");
            last = used;
        }
        // fc.input (64 KiB) and the mask (16 KiB) alone take 3.6 bits per dense value.
        let e = bits_at(&recs[0], &recs, 3.0, 4.0, 1 << 27).unwrap_err();
        assert!(e.contains("cannot be met"), "{e}");
        assert!(bits_at(&recs[1], &recs, 5.0, 4.0, 1 << 27).unwrap_err().contains("no bands"));
    }

    #[test]
    fn the_mask_follows_the_policy_and_the_sign() {
        let recs = step();
        let b = Bits { bits: vec![8, 4, 2, 0], budget: 4.0, own_mask: false, live: true };
        assert_eq!(mask(&recs[2], &b, true), Mask::Zeros);
        assert_eq!(mask(&recs[2], &b, false), Mask::None);
        assert_eq!(mask(&record("x", &[16, 8, 16, 16], "fdsr:budget=4,mask=clamp"), &b, true), Mask::Clamp);
        let plain = record("x", &[16, 8, 16, 16], "fdsr:budget=4");
        assert_eq!(mask(&plain, &b, true), Mask::None);
    }
}
