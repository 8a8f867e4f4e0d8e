//! The PFQ stage schedule: the loss-plateau rule that moves to the next bit stage.
//!
//! After each evaluation interval the loss is recorded. With at least `window` losses since the
//! last turning point, the relative change `|L[-window] - L[-1]| / |L[-window]|` over the last
//! `window` of them is compared with the threshold; below it, the stage advances (a turning
//! point), the threshold is multiplied by `decay` and the window restarts. At most `turns`.

use super::policy::Pfq;
use crate::error::{FdsrError, Result};

/// Where a PFQ run stands; [`PfqState::to_text`] and [`PfqState::from_text`] carry it through
/// checkpoints so a resumed run is exact.
#[derive(Clone, Debug, PartialEq)]
pub struct PfqState {
    /// Current stage index into `fw`/`bw`.
    pub stage: usize,
    /// Current threshold.
    pub threshold: f64,
    /// Losses since the last turning point.
    pub losses: Vec<f64>,
    /// Evaluation intervals at which the stage advanced.
    pub turning_points: Vec<usize>,
    /// Evaluation intervals seen.
    pub intervals: usize,
}

impl PfqState {
    /// The state at the start of training.
    pub fn new(p: &Pfq) -> Self {
        PfqState { stage: 0, threshold: p.threshold, losses: Vec::new(), turning_points: Vec::new(), intervals: 0 }
    }

    /// Forward and backward bits of the current stage.
    pub fn bits(&self, p: &Pfq) -> (u8, u8) {
        (p.fw[self.stage], p.bw[self.stage])
    }

    /// Records the loss of one evaluation interval; returns whether the stage advanced.
    pub fn observe(&mut self, p: &Pfq, loss: f64) -> bool {
        self.intervals += 1;
        self.losses.push(loss);
        if self.turning_points.len() >= p.turns || self.losses.len() < p.window {
            return false;
        }
        let first = self.losses[self.losses.len() - p.window];
        let change = (first - loss).abs() / first.abs().max(f64::MIN_POSITIVE);
        if change < self.threshold {
            self.stage += 1;
            self.threshold *= p.decay;
            self.losses.clear();
            self.turning_points.push(self.intervals);
            return true;
        }
        false
    }

    /// The state as one line of text (f64 values by their bits).
    pub fn to_text(&self) -> String {
        let losses: Vec<String> = self.losses.iter().map(|l| format!("{:016x}", l.to_bits())).collect();
        let turns: Vec<String> = self.turning_points.iter().map(|t| t.to_string()).collect();
        format!(
            "stage={} threshold={:016x} intervals={} turns={} losses={}",
            self.stage,
            self.threshold.to_bits(),
            self.intervals,
            turns.join(","),
            losses.join(",")
        )
    }

    /// Parses [`PfqState::to_text`], checking it against `p`.
    pub fn from_text(p: &Pfq, s: &str) -> Result<Self> {
        let bad = |why: &str| FdsrError::Corrupt(format!("pfq state '{s}': {why}"));
        let mut fields = s.split(' ').map(|f| f.split_once('=').ok_or_else(|| bad("not key=value")));
        let mut next = |k: &str| -> Result<&str> {
            let (key, v) = fields.next().ok_or_else(|| bad("too short"))??;
            if key != k {
                return Err(bad(&format!("expected {k}")));
            }
            Ok(v)
        };
        let int = |v: &str| v.parse::<usize>().map_err(|_| bad("bad number"));
        let float = |v: &str| u64::from_str_radix(v, 16).map(f64::from_bits).map_err(|_| bad("bad value"));
        let list = |v: &str| v.split(',').filter(|x| !x.is_empty()).map(str::to_string).collect::<Vec<_>>();
        let stage = int(next("stage")?)?;
        let threshold = float(next("threshold")?)?;
        let intervals = int(next("intervals")?)?;
        let turning_points = list(next("turns")?).iter().map(|x| int(x)).collect::<Result<Vec<_>>>()?;
        let losses = list(next("losses")?).iter().map(|x| float(x)).collect::<Result<Vec<_>>>()?;
        if stage >= p.fw.len() || turning_points.len() != stage || stage > p.turns {
            return Err(bad("stage does not fit the policy"));
        }
        Ok(PfqState { stage, threshold, losses, turning_points, intervals })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plateau_rule_advances_and_decays() {
        let p = Pfq::default();
        let mut s = PfqState::new(&p);
        // Falling fast: no turning point.
        for i in 0..6 {
            assert!(!s.observe(&p, 2.0 / (1.0 + i as f64)));
        }
        assert_eq!(s.stage, 0);
        // Flat: the fifth flat loss compares 0.30 with 0.29 (3.3% < 5%).
        for (i, l) in [0.30, 0.30, 0.30, 0.295, 0.29].into_iter().enumerate() {
            assert_eq!(s.observe(&p, l), i == 4);
        }
        assert_eq!((s.stage, s.bits(&p)), (1, (4, 6)));
        assert!((s.threshold - 0.015).abs() < 1e-12);
        assert_eq!(s.turning_points, vec![11]);
        // 3.3% no longer plateaus under 1.5%; 1% does.
        for l in [0.30, 0.30, 0.30, 0.295, 0.29] {
            assert!(!s.observe(&p, l));
        }
        assert!(s.observe(&p, 0.297));
        let text = s.to_text();
        assert_eq!(PfqState::from_text(&p, &text).unwrap(), s);
        assert!(PfqState::from_text(&p, "stage=9 threshold=0 intervals=0 turns= losses=").is_err());
        // At most `turns` turning points.
        for _ in 0..40 {
            s.observe(&p, 0.1);
        }
        assert_eq!((s.stage, s.turning_points.len()), (3, 3));
    }
}
