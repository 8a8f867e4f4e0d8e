//! FracTrain's progressive fractional quantization (`fractrain-pfq`): its options, the loss its
//! plateau rule reads, and the cadence of the rule's checks and of the final stretch, derived
//! from the run's length. The rule itself and its state are in [`super::schedule`].

use std::fmt;
use std::str::FromStr;

/// Progressive fractional quantization options.
#[derive(Clone, Debug, PartialEq)]
pub struct Pfq {
    /// Forward bits (activations and weights) per stage.
    pub fw: Vec<u8>,
    /// Backward bits (output gradients) per stage, as many as `fw`.
    pub bw: Vec<u8>,
    /// Checks of the plateau rule it compares (the loss of the oldest with the newest).
    pub window: usize,
    /// Initial relative-change threshold.
    pub threshold: f64,
    /// Factor applied to the threshold after each turning point.
    pub decay: f64,
    /// Most turning points (at most `fw.len() - 1`).
    pub turns: usize,
    /// About how many times the rule is checked before the final stretch, whatever the run's
    /// length: every `max(1, ⌊S / checks⌋)` steps, where the final stretch starts after step `S`.
    pub checks: usize,
    /// Share of the run's steps, at its end, computed at the last stage whatever the rule said
    /// (the final stretch; 0 turns it off).
    pub final_share: f64,
    /// The loss the rule reads.
    pub signal: Signal,
}

impl Default for Pfq {
    fn default() -> Self {
        Pfq {
            fw: vec![3, 4, 6, 8],
            bw: vec![6, 6, 8, 8],
            window: 5,
            threshold: 0.05,
            decay: 0.3,
            turns: 3,
            checks: 24,
            final_share: 0.25,
            signal: Signal::Train,
        }
    }
}

/// The loss the PFQ plateau rule reads at its checks; never the test set's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The mean training loss over the steps since the previous check (summed on the device;
    /// read only at checks and with the logged metrics).
    Train,
    /// The loss of a validation split held out of the training set (`--val N`), evaluated at
    /// each check at the current bits.
    Val,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Train => "train",
            Signal::Val => "val",
        })
    }
}

impl FromStr for Signal {
    type Err = &'static str;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "train" => Ok(Signal::Train),
            "val" => Ok(Signal::Val),
            _ => Err("signal must be train or val"),
        }
    }
}

/// When the plateau rule of a run is checked and where its final stretch starts, derived from
/// the policy and the run's length, so that runs of any length see about `checks` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cadence {
    /// Steps of the run.
    pub total: u64,
    /// Steps between checks.
    pub every: u64,
    /// Steps taken when the final stretch starts (`total` when there is none).
    pub final_start: u64,
}

impl Cadence {
    /// The cadence of `p` over a run of `total` steps: the final stretch is the last
    /// `⌈final · total⌉` steps, and the rule is checked every `max(1, ⌊S / checks⌋)` steps
    /// before it (`S` steps taken when it starts).
    pub fn new(p: &Pfq, total: u64) -> Cadence {
        // The small margin keeps 0.3 · 10 from rounding up to 4.
        let tail = (p.final_share * total as f64 - 1e-9).ceil().max(0.0) as u64;
        let final_start = total - tail.min(total);
        Cadence { total, every: (final_start / p.checks.max(1) as u64).max(1), final_start }
    }

    /// Whether the rule is checked once `steps` steps are taken (never in the final stretch).
    pub fn is_check(&self, steps: u64) -> bool {
        steps > 0 && steps < self.final_start && steps.is_multiple_of(self.every)
    }

    /// Whether the step after `steps` taken lies in the final stretch (at the last stage).
    pub fn in_final(&self, steps: u64) -> bool {
        steps >= self.final_start && self.final_start < self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cadence_scales_with_the_run() {
        let p = Pfq::default();
        // One epoch of the lavapipe stand-in (4096 images at 128), two, one and fifteen epochs of
        // Fashion-MNIST (468 steps each): the final quarter is at the last stage, and the rule
        // sees about 24 checks before it whatever the length.
        for (total, every, final_start) in [(32, 1, 24), (64, 2, 48), (468, 14, 351), (7020, 219, 5265)] {
            let c = Cadence::new(&p, total);
            assert_eq!((c.every, c.final_start), (every, final_start), "{total} steps");
            let checks = (0..=total).filter(|&s| c.is_check(s)).count();
            assert!((23..=25).contains(&checks), "{total} steps: {checks} checks");
            assert!(!c.in_final(final_start - 1) && c.in_final(final_start) && c.in_final(total));
            assert!(!c.is_check(0) && !c.is_check(final_start));
        }
        // 30% of 10 steps is 3, not 4; no final stretch at 0; a run shorter than `checks`
        // is checked after every step.
        let share = |final_share| Pfq { final_share, ..Pfq::default() };
        assert_eq!(Cadence::new(&share(0.3), 10).final_start, 7);
        let none = Cadence::new(&share(0.0), 10);
        assert_eq!((none.final_start, none.every), (10, 1));
        assert!(!none.in_final(10));
        assert!((1..7).all(|s| Cadence::new(&share(0.3), 10).is_check(s)));
        // A run whose final stretch covers every step starts at the last stage.
        assert!(Cadence::new(&share(0.5), 1).in_final(0));
    }
}
