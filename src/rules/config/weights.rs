//! The weights of gradient-aware allocation (`,grad`, `,drop`): how much a DC error and a
//! dropped band's error count against the AC bands' rounding noise.

use super::{BitChoice, FdsrConfig};

/// Weight of the DC band's error under `,grad` for a tensor whose codec has `budget` bits per
/// value, as the device computes it (f32): 8 up to 2.25 bits, 64 from 3.25, geometric in
/// between. A weight gradient sums products over many values: unbiased rounding noise of the AC
/// coefficients averages out in that sum, while a DC error (the same offset on all 64 values of
/// a tile) adds up. Measured on `cnn` with `fdsr grad-error` (BENCHMARKS.md, issue 17): at 11x
/// and 16x (codec budgets of about 2.1 and 1.2 bits) 8 gave a sixth to a third less gradient
/// error than 32 or 64, at 8x (about 3.2 bits) 64 a fifth less than 8. Until stop 47 dropped
/// bands took this weight too (`,drop=dc`).
pub fn coherent_weight_at(budget: f64) -> f32 {
    (8.0 * 8f64.powf((budget - 2.25).clamp(0.0, 1.0))) as f32
}

/// Weight of a dropped band's error under `,grad` without `,drop=` or `,grad=W`: the largest
/// weight, so a band is dropped only where the budget leaves no other choice (then the one of
/// least energy). A dropped band is a bias, which the steps of training keep, where rounding
/// noise averages away; the gradient-error probe of one step counts both alike. On the `cnn`
/// stand-in at 21.4x (BENCHMARKS.md, issue 17, stop 47) it gained 0.70 points over the DC's
/// weight of before in the mean of three seeds (0.2 to 1.5 on each) with a fifth less bias and
/// twice the probe's gradient error; 16x is there too.
pub const DEFAULT_DROP_WEIGHT: f32 = 1024.0;

/// The largest weight `,grad=W` and `,drop=W` take (the smallest is 1).
pub const MAX_WEIGHT: f32 = 1024.0;

/// Weight of a dropped band's error (`,drop=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DropWeight {
    /// The DC band's weight (`,drop=dc`): one weight for both, what `,grad` meant before stop 47.
    Dc,
    /// A weight of its own (`,drop=W`, 1 to [`MAX_WEIGHT`]).
    Fixed(f32),
}

/// The allocation's weights of one tensor: errors of the DC band and of dropped bands count
/// these times; the AC bands' rounding noise once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocWeights {
    /// The DC band's.
    pub dc: f32,
    /// A dropped band's.
    pub dropped: f32,
}

impl AllocWeights {
    /// Both 1: the estimate of the reconstruction error (without `,grad`).
    pub const PLAIN: Self = Self { dc: 1.0, dropped: 1.0 };
}

impl FdsrConfig {
    /// The weights for a tensor whose codec has `budget` bits per value: without `,grad` both 1;
    /// else the DC's `,grad=W` or [`coherent_weight_at`] the budget, a dropped band's `,drop=W`,
    /// the DC's (`,drop=dc`, or `,grad=W` without `,drop`) or [`DEFAULT_DROP_WEIGHT`].
    pub fn weights_at(&self, budget: f64) -> AllocWeights {
        if !self.grad_aware {
            return AllocWeights::PLAIN;
        }
        let dc = self.grad_weight.unwrap_or_else(|| coherent_weight_at(budget));
        let dropped = match self.drop_weight {
            Some(DropWeight::Fixed(w)) => w,
            Some(DropWeight::Dc) => dc,
            None if self.grad_weight.is_some() => dc,
            None => DEFAULT_DROP_WEIGHT,
        };
        AllocWeights { dc, dropped }
    }

    /// [`Self::weights_at`] the configuration's own budget (0 for fixed bits, which choose
    /// nothing).
    pub fn weights(&self) -> AllocWeights {
        self.weights_at(match self.bits {
            BitChoice::Budget(b) => b,
            BitChoice::Fixed(_) => 0.0,
        })
    }
}
