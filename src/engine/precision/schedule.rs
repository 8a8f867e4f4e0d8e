//! The PFQ stage schedule: the loss-plateau rule that moves to the next bit stage at its checks,
//! the final stretch at the last stage, and the training loss the rule reads between checks.
//!
//! At each check ([`Cadence`]) the rule records one loss: the mean training loss over the steps
//! since the previous check (`signal=train`), or the loss of a validation split held out of the
//! training set (`signal=val`); never the test set's. With at least `window` losses since the
//! last turning point, the relative change `|L[-window] - L[-1]| / |L[-window]|` over the last
//! `window` of them is compared with the threshold; below it, the stage advances (a turning
//! point), the threshold is multiplied by `decay` and the window restarts. At most `turns`. Once
//! the final stretch starts, the stage is the last one whatever the rule said.

use super::pfq::{Cadence, Pfq};
use crate::error::{FdsrError, Result};

/// One check of the plateau rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    /// Steps taken at the check.
    pub step: u64,
    /// The loss the rule read.
    pub loss: f64,
    /// Relative change over the window (`None` before `window` losses since the last turn).
    pub change: Option<f64>,
    /// Threshold the change was compared with.
    pub threshold: f64,
    /// Whether the stage advanced here.
    pub turned: bool,
}

/// Where a PFQ run stands; [`PfqState::to_text`] and [`PfqState::from_text`] carry it through
/// checkpoints so a resumed run is exact.
#[derive(Clone, Debug, PartialEq)]
pub struct PfqState {
    /// Current stage index into `fw`/`bw`.
    pub stage: usize,
    /// Current threshold.
    pub threshold: f64,
    /// Losses of the checks since the last turning point.
    pub losses: Vec<f64>,
    /// Steps taken when the rule advanced the stage.
    pub turning_points: Vec<u64>,
    /// Steps taken when the final stretch raised the stage to the last one (`None` if it has not
    /// started, or the rule had reached the last stage before).
    pub final_step: Option<u64>,
    /// Steps taken.
    pub steps: u64,
    /// When the rule is checked and the final stretch starts.
    pub cadence: Cadence,
    /// Sum of the per-step training losses read since the last check, and their steps.
    train: (f64, u64),
}

impl PfqState {
    /// The state at the start of a run of `total` steps.
    pub fn new(p: &Pfq, total: u64) -> Self {
        let cadence = Cadence::new(p, total);
        let mut s = PfqState {
            stage: 0,
            threshold: p.threshold,
            losses: Vec::new(),
            turning_points: Vec::new(),
            final_step: None,
            steps: 0,
            cadence,
            train: (0.0, 0),
        };
        s.settle(p);
        s
    }

    /// Forward and backward bits of the current stage.
    pub fn bits(&self, p: &Pfq) -> (u8, u8) {
        (p.fw[self.stage], p.bw[self.stage])
    }

    /// In the final stretch, the last stage.
    fn settle(&mut self, p: &Pfq) {
        if self.cadence.in_final(self.steps) && self.stage + 1 < p.fw.len() {
            self.stage = p.fw.len() - 1;
            self.final_step = Some(self.steps);
        }
    }

    /// Counts one step taken; the final stretch may start.
    pub fn step(&mut self, p: &Pfq) {
        self.steps += 1;
        self.settle(p);
    }

    /// Adds the sum of `steps` per-step training losses read from the device.
    pub fn add_train_loss(&mut self, sum: f64, steps: u64) {
        self.train = (self.train.0 + sum, self.train.1 + steps);
    }

    /// Whether the rule is checked now (a check step, with a turning point left to take).
    pub fn due(&self, p: &Pfq) -> bool {
        self.cadence.is_check(self.steps) && self.turning_points.len() < p.turns
    }

    /// The mean training loss since the previous check (`None` when none was read); restarts it.
    pub fn take_train_loss(&mut self) -> Option<f64> {
        let (sum, steps) = std::mem::take(&mut self.train);
        (steps > 0).then(|| sum / steps as f64)
    }

    /// Records the loss of a check; the stage advances when the loss has plateaued.
    pub fn check(&mut self, p: &Pfq, loss: f64) -> Check {
        self.losses.push(loss);
        let mut check = Check { step: self.steps, loss, change: None, threshold: self.threshold, turned: false };
        if self.turning_points.len() >= p.turns || self.losses.len() < p.window {
            return check;
        }
        let first = self.losses[self.losses.len() - p.window];
        let change = (first - loss).abs() / first.abs().max(f64::MIN_POSITIVE);
        check.change = Some(change);
        if change < self.threshold {
            self.stage += 1;
            self.threshold *= p.decay;
            self.losses.clear();
            self.turning_points.push(self.steps);
            check.turned = true;
        }
        check
    }

    /// The state as one line of text (f64 values by their bits).
    pub fn to_text(&self) -> String {
        let hex = |v: &[f64]| v.iter().map(|l| format!("{:016x}", l.to_bits())).collect::<Vec<_>>().join(",");
        let turns: Vec<String> = self.turning_points.iter().map(|t| t.to_string()).collect();
        format!(
            "stage={} threshold={:016x} steps={} total={} turns={} final={} losses={} train={},{}",
            self.stage,
            self.threshold.to_bits(),
            self.steps,
            self.cadence.total,
            turns.join(","),
            self.final_step.map_or(String::new(), |s| s.to_string()),
            hex(&self.losses),
            hex(&[self.train.0]),
            self.train.1
        )
    }

    /// Parses [`PfqState::to_text`], checking it against `p` and a run of `total` steps.
    pub fn from_text(p: &Pfq, total: u64, s: &str) -> Result<Self> {
        let bad = |why: &str| FdsrError::Corrupt(format!("pfq state '{s}': {why}"));
        let mut fields = s.split(' ').map(|f| f.split_once('=').ok_or_else(|| bad("not key=value")));
        let mut next = |k: &str| -> Result<&str> {
            let (key, v) = fields.next().ok_or_else(|| bad("too short"))??;
            if key != k {
                return Err(bad(&format!("expected {k}")));
            }
            Ok(v)
        };
        let int = |v: &str| v.parse::<u64>().map_err(|_| bad("bad number"));
        let float = |v: &str| u64::from_str_radix(v, 16).map(f64::from_bits).map_err(|_| bad("bad value"));
        let list = |v: &str| v.split(',').filter(|x| !x.is_empty()).map(str::to_string).collect::<Vec<_>>();
        let stage = int(next("stage")?)? as usize;
        let threshold = float(next("threshold")?)?;
        let steps = int(next("steps")?)?;
        let saved_total = int(next("total")?)?;
        let turning_points = list(next("turns")?).iter().map(|x| int(x)).collect::<Result<Vec<_>>>()?;
        let final_step = list(next("final")?).first().map(|x| int(x)).transpose()?;
        let losses = list(next("losses")?).iter().map(|x| float(x)).collect::<Result<Vec<_>>>()?;
        let (sum, count) = next("train")?.split_once(',').ok_or_else(|| bad("train is not sum,steps"))?;
        let train = (float(sum)?, int(count)?);
        if saved_total != total {
            return Err(FdsrError::InvalidConfig(format!(
                "the checkpoint's PFQ schedule is for a run of {saved_total} steps, this run has {total}"
            )));
        }
        let rule_stage = if final_step.is_some() { p.fw.len() - 1 } else { turning_points.len() };
        if stage >= p.fw.len() || stage != rule_stage || turning_points.len() > p.turns || steps > total {
            return Err(bad("stage does not fit the policy"));
        }
        let cadence = Cadence::new(p, total);
        Ok(PfqState { stage, threshold, losses, turning_points, final_step, steps, cadence, train })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks `s` now (if due) with the training loss read so far.
    fn check(p: &Pfq, s: &mut PfqState) -> Option<Check> {
        s.due(p).then(|| s.take_train_loss()).flatten().map(|l| s.check(p, l))
    }

    #[test]
    fn plateau_rule_advances_and_decays() {
        let p = Pfq::default();
        let mut s = PfqState::new(&p, 1000);
        // Falling fast: no turning point.
        for i in 0..6 {
            assert!(!s.check(&p, 2.0 / (1.0 + i as f64)).turned);
        }
        assert_eq!(s.stage, 0);
        // Flat: the fifth flat loss compares 0.30 with 0.29 (3.3% < 5%).
        for (i, l) in [0.30, 0.30, 0.30, 0.295, 0.29].into_iter().enumerate() {
            s.steps += 1;
            assert_eq!(s.check(&p, l).turned, i == 4);
        }
        assert_eq!((s.stage, s.bits(&p)), (1, (4, 6)));
        assert!((s.threshold - 0.015).abs() < 1e-12);
        assert_eq!(s.turning_points, vec![5]);
        // 3.3% no longer plateaus under 1.5%; 1% does.
        for l in [0.30, 0.30, 0.30, 0.295, 0.29] {
            assert!(!s.check(&p, l).turned);
        }
        let c = s.check(&p, 0.297);
        assert!(c.turned && (c.change.unwrap() - 0.01).abs() < 1e-12 && c.threshold == 0.015);
        s.add_train_loss(1.5, 3);
        let text = s.to_text();
        assert_eq!(PfqState::from_text(&p, 1000, &text).unwrap(), s);
        assert!(PfqState::from_text(&p, 999, &text).unwrap_err().to_string().contains("1000 steps"));
        let bad = "stage=9 threshold=0 steps=0 total=1000 turns= final= losses= train=0,0";
        assert!(PfqState::from_text(&p, 1000, bad).is_err());
        assert_eq!(s.take_train_loss(), Some(0.5));
        assert_eq!(s.take_train_loss(), None);
        // At most `turns` turning points; then no check is due.
        for _ in 0..40 {
            s.check(&p, 0.1);
        }
        assert_eq!((s.stage, s.turning_points.len()), (3, 3));
        s.steps = s.cadence.every;
        assert!(!s.due(&p));
    }

    /// A loss that falls fast and levels off at the same share of any run, with a deterministic
    /// ±2% wobble per step.
    fn loss(step: u64, total: u64) -> f64 {
        let wobble = 0.02 * ((step.wrapping_mul(0x9E37_79B9) >> 7) % 101) as f64 / 50.0 - 0.02;
        (0.35 + 2.0 * (-(step as f64) / (0.08 * total as f64)).exp()) * (1.0 + wobble)
    }

    #[test]
    fn one_and_three_epoch_runs_turn_and_end_at_the_last_stage() {
        let p = Pfq::default();
        // One and three epochs of Fashion-MNIST at batch 128, and the one-epoch lavapipe stand-in.
        for total in [468, 1404, 32] {
            let mut s = PfqState::new(&p, total);
            let mut stages = Vec::new();
            for step in 0..total {
                stages.push(s.stage);
                s.add_train_loss(loss(step, total), 1);
                s.step(&p);
                check(&p, &mut s);
            }
            let start = s.cadence.final_start;
            assert!(!s.turning_points.is_empty(), "{total} steps: no turning point");
            assert!(s.turning_points.iter().all(|&t| t < start), "{total}: {:?}", s.turning_points);
            assert!(stages.windows(2).all(|w| w[0] <= w[1]) && stages[0] == 0, "{total}: {stages:?}");
            assert!(stages[start as usize..].iter().all(|&st| st == 3), "{total}: {stages:?}");
            assert!(stages[start as usize - 1] < 3, "{total}: the rule alone reached the last stage");
            assert_eq!(s.final_step, Some(start));
            assert_eq!(start, total - total.div_ceil(4));
        }
        // Without a final stretch the rule alone decides.
        let p = Pfq { final_share: 0.0, ..Pfq::default() };
        let mut s = PfqState::new(&p, 468);
        for step in 0..468 {
            s.add_train_loss(loss(step, 468), 1);
            s.step(&p);
            check(&p, &mut s);
        }
        assert!(s.final_step.is_none() && s.stage == s.turning_points.len() && s.stage > 0);
    }
}
