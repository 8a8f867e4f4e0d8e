//! Codec policies and options: what to compress with, parsed from and printed as CLI strings.

use crate::error::{FdsrError, Result};
use std::fmt;

mod parse;
mod weights;
pub use parse::{parse_list, split_policies};
pub use weights::{coherent_weight_at, AllocWeights, DropWeight, DEFAULT_DROP_WEIGHT, MAX_WEIGHT};

/// Default zig-zag band edges: DC `{0}`, low `[1,6)`, mid `[6,28)`, high `[28,45)`, top
/// `[45,64)`. With 5-bit AC scale codes a fifth band costs 5 bits per full tile, and splitting the
/// high band (often dropped whole under a tight budget) gave 1–12% less gradient error on `cnn`
/// from 9.4x to 21.4x than the four bands DC, low, mid, high (BENCHMARKS.md, "Coarser AC scale
/// codes and a fifth band").
pub const DEFAULT_BAND_EDGES: [u8; 6] = [0, 1, 6, 28, 45, 64];
/// The four bands DC, low, mid, high: the edges of four fixed widths (`bits=D,L,M,H`) when no
/// edges are given.
pub const FOUR_BAND_EDGES: [u8; 5] = [0, 1, 6, 28, 64];

/// The band edges `bits` take when none are given: four fixed widths keep [`FOUR_BAND_EDGES`],
/// everything else [`DEFAULT_BAND_EDGES`].
pub fn default_edges_for(bits: &BitChoice) -> &'static [u8] {
    match bits {
        BitChoice::Fixed(b) if b.len() == FOUR_BAND_EDGES.len() - 1 => &FOUR_BAND_EDGES,
        _ => &DEFAULT_BAND_EDGES,
    }
}
/// Default AC-energy fraction under which a tile is stored as DC only.
pub const DEFAULT_DC_THRESHOLD: f32 = 1e-3;
/// Group size of the uniform (ActNN-like) and flat paths.
pub const GROUP_SIZE: usize = 256;

/// How values are rounded to codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// Unbiased stochastic rounding from the counter-based RNG (default).
    Stochastic,
    /// Round to nearest.
    Nearest,
}

/// Bits per band for `fdsr`: fixed, or chosen under a budget.
#[derive(Clone, Debug, PartialEq)]
pub enum BitChoice {
    /// One bit-width per band (0..=8 or 16).
    Fixed(Vec<u8>),
    /// Average bits per value, metadata included.
    Budget(f64),
}

/// Configuration of the `fdsr` policy.
#[derive(Clone, Debug, PartialEq)]
pub struct FdsrConfig {
    /// Zig-zag band edges, starting `[0, 1, …]` and ending at 64.
    pub band_edges: Vec<u8>,
    /// Bit-widths or budget.
    pub bits: BitChoice,
    /// AC energy fraction under which a tile is DC-only.
    pub dc_threshold: f32,
    /// Similarity reuse (LSH) of near-duplicate full tiles; `None` (the default) turns it off.
    pub reuse: Option<ReuseConfig>,
    /// Mask-aware storage of saved activations that a ReLU gates (`,mask`): the ReLU's exact
    /// zero mask, which the ReLU keeps for its own backward anyway, is re-applied after
    /// decoding. Used by the training engine's saved-activation store; the codec alone ignores
    /// it.
    pub mask_aware: bool,
    /// Whether the mask-aware decode also clamps the kept values at 0 (`,mask=clamp`) or only
    /// restores the exact zeros (`,mask` and `,mask=zeros`): the clamp removes the negative
    /// part of the rounding noise, which biases small positive values upward; without it the
    /// decode stays unbiased (stochastic rounding is, and the zeros are exact).
    pub mask_clamp: bool,
    /// Whether a mask-aware policy also keeps an own zero mask (one bit per value, from the
    /// tensor's budget) for tensors ≥ 0 that no ReLU mask covers, such as pooled ReLU outputs
    /// (`,mask=zeros` and `,mask=clamp`); `,mask` keeps only the ReLUs' masks, which are free.
    pub own_masks: bool,
    /// Gradient-aware allocation under a budget (`,grad`): the DC band's and dropped bands'
    /// errors count more than the AC bands' rounding noise ([`Self::weights_at`]), since they add
    /// up in weight gradients where rounding noise averages out.
    pub grad_aware: bool,
    /// The DC band's weight in gradient-aware allocation where fixed (`,grad=W`); `None`
    /// (`,grad` alone): [`coherent_weight_at`] the tensor's budget. Ignored without
    /// [`Self::grad_aware`].
    pub grad_weight: Option<f32>,
    /// A dropped band's weight in gradient-aware allocation (`,drop=W` or `,drop=dc`); `None`:
    /// the DC's under `,grad=W`, else [`DEFAULT_DROP_WEIGHT`]. Needs [`Self::grad_aware`].
    pub drop_weight: Option<DropWeight>,
    /// Probe-driven reallocation under a budget (`,realloc`): in training the budget controller
    /// shares the step's total out per saved tensor by the sensitivities the gradient-error
    /// probe measures. Off by default (on the `cnn` stand-in on lavapipe it neither costs nor
    /// gains accuracy at 16x over three seeds; its earlier cost was measured with llvmpipe's
    /// truncated weight gradients; BENCHMARKS.md, issue 17): every compressed tensor then has
    /// the step plan's budget and its bits per band are chosen from its own analysis.
    pub realloc: bool,
    /// Accuracy-following budget (`,auto`, which implies [`Self::realloc`]): in training the
    /// budget controller may raise the total above the budget when the probe's gradient error is
    /// high (and lower it when low). Off by default: the budget is then a bound on every step's
    /// stored bytes.
    pub auto: bool,
    /// The budget was given as a ratio `R` (`ratio=R`, the budget `32 / R`): printed that way.
    pub ratio: Option<f64>,
}

/// Default number of leading zig-zag coefficients a signature projects.
pub const DEFAULT_REUSE_LEADING: u8 = 16;
/// Default number of SimHash bits.
pub const DEFAULT_REUSE_BITS: u8 = 16;
/// Default number of claim/verify rounds.
pub const DEFAULT_REUSE_ROUNDS: u8 = 4;

/// Similarity reuse (docs/CODEC.md, "Similarity reuse"): SimHash signatures over the leading
/// coefficients, buckets by signature and magnitude key, verification against the bucket's
/// lowest-index tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReuseConfig {
    /// Leading AC zig-zag coefficients (1..=K) the hyperplanes project, `K` in 1..=63.
    pub leading: u8,
    /// Signature bits, one hyperplane each (1..=20).
    pub bits: u8,
    /// Claim/verify rounds (1..=16): tiles that fail verification claim again in the next round.
    pub rounds: u8,
}

impl Default for ReuseConfig {
    fn default() -> Self {
        Self { leading: DEFAULT_REUSE_LEADING, bits: DEFAULT_REUSE_BITS, rounds: DEFAULT_REUSE_ROUNDS }
    }
}

impl ReuseConfig {
    /// Checks the ranges of every field.
    pub fn validate(&self) -> Result<()> {
        if !(1..=63).contains(&self.leading) || !(1..=20).contains(&self.bits) || !(1..=16).contains(&self.rounds) {
            return Err(FdsrError::InvalidConfig(format!(
                "reuse {}/{}/{} needs leading AC coefficients in 1..=63, signature bits in 1..=20, rounds in 1..=16",
                self.leading, self.bits, self.rounds
            )));
        }
        Ok(())
    }

    /// Parses the value of `reuse=K/B[/R]` (`K` leading coefficients, `B` bits, `R` rounds).
    fn parse(v: &str) -> Result<Self> {
        let n = parse_list(&v.replace('/', ","))?;
        let d = Self::default();
        let c = match n[..] {
            [k, b] => Self { leading: k, bits: b, ..d },
            [k, b, r] => Self { leading: k, bits: b, rounds: r },
            _ => return Err(FdsrError::InvalidConfig(format!("reuse={v}: expected K/B or K/B/R"))),
        };
        c.validate()?;
        Ok(c)
    }
}

impl Default for FdsrConfig {
    fn default() -> Self {
        Self {
            band_edges: DEFAULT_BAND_EDGES.to_vec(),
            bits: BitChoice::Budget(2.0),
            dc_threshold: DEFAULT_DC_THRESHOLD,
            reuse: None,
            mask_aware: false,
            mask_clamp: false,
            own_masks: false,
            grad_aware: false,
            grad_weight: None,
            drop_weight: None,
            realloc: false,
            auto: false,
            ratio: None,
        }
    }
}

impl FdsrConfig {
    /// Checks band edges, bit-widths and budget.
    pub fn validate(&self) -> Result<()> {
        let out_of_range = |w: &f32| !(w.is_finite() && (1.0..=MAX_WEIGHT).contains(w));
        if let Some(w) = self.grad_weight.filter(out_of_range) {
            return Err(FdsrError::InvalidConfig(format!("grad={w}: the weight must be in [1, {MAX_WEIGHT}]")));
        }
        match self.drop_weight {
            Some(DropWeight::Fixed(w)) if out_of_range(&w) => {
                return Err(FdsrError::InvalidConfig(format!(
                    "drop={w}: the dropped-band weight must be in [1, {MAX_WEIGHT}] (or dc)"
                )))
            }
            Some(_) if !self.grad_aware => {
                return Err(FdsrError::InvalidConfig(",drop weighs gradient-aware allocation: it needs ,grad".into()))
            }
            _ => {}
        }
        if self.realloc && matches!(self.bits, BitChoice::Fixed(_)) {
            return Err(FdsrError::InvalidConfig(
                ",realloc and ,auto share a budget out between tensors: they need budget=B or ratio=R, not bits="
                    .into(),
            ));
        }
        let e = &self.band_edges;
        if e.len() < 3 || e.len() > 9 || e[0] != 0 || e[1] != 1 || *e.last().unwrap_or(&0) != 64 {
            return Err(FdsrError::InvalidConfig(format!(
                "band edges {e:?} must start 0,1 (DC alone), end at 64 and give 2 to 8 bands"
            )));
        }
        if e.windows(2).any(|w| w[0] >= w[1]) {
            return Err(FdsrError::InvalidConfig(format!("band edges {e:?} must increase strictly")));
        }
        match &self.bits {
            BitChoice::Fixed(b) => {
                if b.len() != e.len() - 1 {
                    return Err(FdsrError::InvalidConfig(format!(
                        "{} bit-widths given for {} bands",
                        b.len(),
                        e.len() - 1
                    )));
                }
                if let Some(bad) = b.iter().find(|&&x| x > 8 && x != 16) {
                    return Err(FdsrError::InvalidConfig(format!("bit-width {bad} is not in 0..=8 or 16")));
                }
            }
            BitChoice::Budget(x) => {
                if !(x.is_finite() && *x > 0.0 && *x <= 32.0) {
                    return Err(FdsrError::InvalidConfig(format!("budget {x} bits/value must be in (0, 32]")));
                }
            }
        }
        if !(self.dc_threshold.is_finite() && (0.0..1.0).contains(&self.dc_threshold)) {
            return Err(FdsrError::InvalidConfig(format!("dc threshold {} must be in [0, 1)", self.dc_threshold)));
        }
        self.reuse.as_ref().map_or(Ok(()), ReuseConfig::validate)
    }
}

/// A compression policy.
#[derive(Clone, Debug, PartialEq)]
pub enum Policy {
    /// f32 bits verbatim.
    Lossless,
    /// ActNN-like: groups of 256, per-group min and range, `bits` per value.
    Uniform {
        /// Bits per value, 1..=8.
        bits: u8,
    },
    /// DIVISION-like: 8×8 mean in bf16 plus a 2-bit residual per plane range.
    Division,
    /// Block DCT with bits per frequency band.
    Fdsr(FdsrConfig),
}

impl Policy {
    /// Checks the policy's parameters.
    pub fn validate(&self) -> Result<()> {
        match self {
            Policy::Uniform { bits } if !(1..=8).contains(bits) => {
                Err(FdsrError::InvalidConfig(format!("uniform bits {bits} must be in 1..=8")))
            }
            Policy::Fdsr(c) => c.validate(),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Lossless => write!(f, "lossless"),
            Policy::Uniform { bits } => write!(f, "uniform:{bits}"),
            Policy::Division => write!(f, "division"),
            Policy::Fdsr(c) => {
                match (&c.bits, c.ratio) {
                    (BitChoice::Budget(_), Some(r)) => write!(f, "fdsr:ratio={r}")?,
                    (BitChoice::Budget(b), None) => write!(f, "fdsr:budget={b}")?,
                    (BitChoice::Fixed(b), _) => {
                        let s: Vec<String> = b.iter().map(u8::to_string).collect();
                        write!(f, "fdsr:bits={}", s.join(","))?
                    }
                }
                if c.mask_aware && c.mask_clamp {
                    write!(f, ",mask=clamp")?;
                } else if c.mask_aware && c.own_masks {
                    write!(f, ",mask=zeros")?;
                } else if c.mask_aware {
                    write!(f, ",mask")?;
                }
                match (c.grad_aware, c.grad_weight) {
                    (true, None) => write!(f, ",grad")?,
                    (true, Some(w)) => write!(f, ",grad={w}")?,
                    (false, _) => {}
                }
                match c.drop_weight {
                    Some(DropWeight::Dc) => write!(f, ",drop=dc")?,
                    Some(DropWeight::Fixed(w)) => write!(f, ",drop={w}")?,
                    None => {}
                }
                if c.auto {
                    write!(f, ",auto")?;
                } else if c.realloc {
                    write!(f, ",realloc")?;
                }
                if c.band_edges != default_edges_for(&c.bits) {
                    let e: Vec<String> = c.band_edges.iter().map(u8::to_string).collect();
                    write!(f, ",edges={}", e.join("/"))?;
                }
                match c.reuse {
                    None => Ok(()),
                    Some(r) if r == ReuseConfig::default() => write!(f, ",reuse"),
                    Some(r) => write!(f, ",reuse={}/{}/{}", r.leading, r.bits, r.rounds),
                }
            }
        }
    }
}

/// Per-call options shared by all policies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodecOptions {
    /// Seed of the rounding RNG.
    pub seed: u32,
    /// Tensor id, the RNG stream (distinct saved tensors get distinct streams).
    pub tensor_id: u32,
    /// Rounding mode.
    pub rounding: Rounding,
}

impl Default for CodecOptions {
    fn default() -> Self {
        Self { seed: 0, tensor_id: 0, rounding: Rounding::Stochastic }
    }
}

#[cfg(test)]
mod tests;
