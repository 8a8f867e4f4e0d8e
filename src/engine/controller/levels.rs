//! The controller's arithmetic over budget levels: each tensor's bits and error at every level,
//! and the greedy spending of a total over them.

use crate::codec::alloc::{choose_bits_at, AllocWeights, FdsrStats};
use crate::codec::config::FdsrConfig;

/// A tensor the controller allocates for: compressed under a budget, with its analysis.
pub(super) struct Item<'a> {
    pub name: &'a str,
    pub numel: f64,
    /// Estimated error at each level (`None` where the budget cannot hold the tensor).
    pub errors: Vec<Option<f64>>,
}

/// Raises the tensors from levels `at` (of `levels`, at most `hi`) by the moves of most
/// `kappa`-weighted error reduction per bit while the total stays within `allowed` bits; returns
/// the total. A move may skip levels: bits per band are whole numbers, so a tensor's error falls
/// in steps, and a level that gains nothing can hide the large gain of the one after it.
pub(super) fn spend(items: &[Item], kappa: &[f64], levels: &[f64], at: &mut [usize], hi: usize, allowed: f64) -> f64 {
    let mut spent: f64 = items.iter().zip(at.iter()).map(|(i, &l)| i.numel * levels[l]).sum();
    loop {
        let mut best: Option<(usize, usize, f64)> = None;
        for (k, item) in items.iter().enumerate() {
            let l = at[k];
            let Some(now) = item.errors[l] else { continue };
            for (to, next) in item.errors.iter().enumerate().take(hi + 1).skip(l + 1) {
                let cost = item.numel * (levels[to] - levels[l]);
                if spent + cost > allowed {
                    break;
                }
                let Some(next) = next else { continue };
                let gain = kappa[k] * (now - next) / cost;
                if best.is_none_or(|(_, _, g)| gain > g) {
                    best = Some((k, to, gain));
                }
            }
        }
        let Some((k, to, _)) = best else { return spent };
        spent += items[k].numel * (levels[to] - levels[at[k]]);
        at[k] = to;
    }
}

/// The bits per band the device chooses for analysis `a` at each of `budgets` (bits per value;
/// `None` where it does not fit): with the weights `policy` gives each budget
/// ([`FdsrConfig::weights_at`]: under `,grad` alone the DC's follow it), else with `a`'s own.
/// One search per distinct pair of weights (a few) rather than per budget.
pub(super) fn level_bits(a: &FdsrStats, policy: Option<&FdsrConfig>, budgets: &[f64]) -> Vec<Option<Vec<u8>>> {
    let own = AllocWeights { dc: a.coherent_weight as f32, dropped: a.dropped_weight as f32 };
    let key = |w: AllocWeights| (w.dc.to_bits(), w.dropped.to_bits());
    let mut out = vec![None; budgets.len()];
    let of_budget: Vec<AllocWeights> = budgets.iter().map(|&b| policy.map_or(own, |c| c.weights_at(b))).collect();
    let mut weights = of_budget.clone();
    weights.sort_by_key(|&w| key(w));
    weights.dedup();
    for w in weights {
        let at: Vec<usize> = (0..budgets.len()).filter(|&i| of_budget[i] == w).collect();
        let these: Vec<f64> = at.iter().map(|&i| budgets[i]).collect();
        let mut weighed = a.clone();
        weighed.set_weights(w);
        let Ok(found) = choose_bits_at(&weighed, &these) else { continue };
        for (i, bits) in at.into_iter().zip(found) {
            out[i] = bits.ok();
        }
    }
    out
}
