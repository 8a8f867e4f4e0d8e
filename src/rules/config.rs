//! Codec policies and options: what to compress with, parsed from and printed as CLI strings.

use crate::error::{FdsrError, Result};
use std::fmt;
use std::str::FromStr;

/// Default zig-zag band edges: DC `{0}`, low `[1,6)`, mid `[6,28)`, high `[28,64)`.
pub const DEFAULT_BAND_EDGES: [u8; 5] = [0, 1, 6, 28, 64];
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
    /// Mask-aware storage of saved activations known to be ≥ 0 (ReLU outputs, pooled or not):
    /// their exact zero mask is kept (1 bit per value, shared with the ReLU's own mask where it
    /// is the same tensor) and re-applied after decoding, with a clamp at 0. Used by the
    /// training engine's saved-activation store; the codec alone ignores it.
    pub mask_aware: bool,
    /// Gradient-aware allocation under a budget (`,grad`): a dropped band weighs
    /// [`super::alloc::GRAD_COHERENT_WEIGHT`] times its energy, since its bias adds up in weight
    /// gradients where rounding noise averages out.
    pub grad_aware: bool,
    /// Accuracy-following budget (`,auto`): in training the budget controller may raise the
    /// total above the budget when the probe's gradient error is high (and lower it when low).
    /// Off by default: the budget is then a bound on every step's stored bytes.
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
            grad_aware: false,
            auto: false,
            ratio: None,
        }
    }
}

impl FdsrConfig {
    /// Checks band edges, bit-widths and budget.
    pub fn validate(&self) -> Result<()> {
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

impl FromStr for Policy {
    type Err = FdsrError;
    /// Parses `lossless`, `uniform:B`, `division`, `fdsr`, `fdsr:budget=B`, `fdsr:ratio=R` (the
    /// budget `32 / R`) or `fdsr:bits=8,4,3,2`; the `fdsr` forms take trailing flags `,mask`
    /// (mask-aware), `,grad` (gradient-aware allocation), `,auto` (accuracy-following budget) and
    /// `,reuse` or `,reuse=K/B[/R]` (alone: `fdsr:mask`, `fdsr:reuse`, …).
    fn from_str(s: &str) -> Result<Self> {
        let (name, arg) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
        let bad = || {
            FdsrError::InvalidConfig(format!(
                "unknown policy '{s}' (expected lossless, uniform:B, division, fdsr[:budget=B|:ratio=R|:bits=D,L,M,H][,mask][,grad][,auto][,reuse[=K/B/R]])"
            ))
        };
        let p = match (name, arg) {
            ("lossless", None) => Policy::Lossless,
            ("division", None) => Policy::Division,
            ("uniform", Some(b)) => Policy::Uniform { bits: b.parse().map_err(|_| bad())? },
            ("fdsr", None) => Policy::Fdsr(FdsrConfig::default()),
            ("fdsr", Some(a)) => {
                let mut c = FdsrConfig::default();
                let (a, flags) = split_flags(a);
                for flag in flags {
                    match flag.split_once('=').map_or((flag, None), |(k, v)| (k, Some(v))) {
                        ("mask", None) => c.mask_aware = true,
                        ("grad", None) => c.grad_aware = true,
                        ("auto", None) => c.auto = true,
                        ("reuse", v) => c.reuse = Some(v.map_or(Ok(ReuseConfig::default()), ReuseConfig::parse)?),
                        _ => return Err(bad()),
                    }
                }
                if a.is_empty() && (c.reuse.is_some() || c.mask_aware || c.grad_aware || c.auto) {
                    // `fdsr:reuse`, `fdsr:mask`, `fdsr:grad`: default bits.
                } else if let Some(b) = a.strip_prefix("budget=") {
                    c.bits = BitChoice::Budget(b.parse().map_err(|_| bad())?);
                } else if let Some(r) = a.strip_prefix("ratio=") {
                    let r: f64 = r.parse().map_err(|_| bad())?;
                    if !(r.is_finite() && r >= 1.0) {
                        return Err(FdsrError::InvalidConfig(format!("ratio {r} must be at least 1 (fp32)")));
                    }
                    (c.bits, c.ratio) = (BitChoice::Budget(32.0 / r), Some(r));
                } else if let Some(b) = a.strip_prefix("bits=") {
                    c.bits = BitChoice::Fixed(parse_list(b)?);
                } else {
                    return Err(bad());
                }
                Policy::Fdsr(c)
            }
            _ => return Err(bad()),
        };
        p.validate()?;
        Ok(p)
    }
}

/// Splits the trailing flags (`mask`, `reuse[=…]`) off an `fdsr` argument: the rest, and the
/// flags in the order given.
fn split_flags(a: &str) -> (&str, Vec<&str>) {
    let mut rest = a;
    let mut flags = Vec::new();
    loop {
        let (head, last) = rest.rsplit_once(',').map_or(("", rest), |(r, l)| (r, l));
        if !is_flag(last) {
            break;
        }
        flags.insert(0, last);
        rest = head;
        if head.is_empty() {
            break;
        }
    }
    (rest, flags)
}

/// Whether a comma-separated piece of an `fdsr` policy is one of its flags.
fn is_flag(piece: &str) -> bool {
    piece == "mask" || piece == "grad" || piece == "auto" || piece == "reuse" || piece.starts_with("reuse=")
}

/// Splits a comma-separated list of policies, keeping the commas that belong to one policy
/// (`none,fdsr:bits=8,4,3,2,reuse,uniform:2` → `none`, `fdsr:bits=8,4,3,2,reuse`, `uniform:2`):
/// a piece that is a number or starts with `reuse` continues the policy before it.
pub fn split_policies(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        // A number (`8,4,3,2`, `fw=3,4,6,8`), a flag (`mask`, `reuse=...`), or a bare
        // `key=value` (as in `static:fw=8,bw=16`) continues the entry before it.
        let continues = piece.starts_with(|c: char| c.is_ascii_digit())
            || is_flag(piece)
            || (piece.contains('=') && !piece.contains(':'));
        match out.last_mut() {
            Some(last) if continues => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    out
}

/// Parses a comma-separated list of small integers such as `8,4,3,2`.
pub fn parse_list(s: &str) -> Result<Vec<u8>> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<u8>()
                .map_err(|_| FdsrError::InvalidConfig(format!("'{x}' in '{s}' is not a number 0..=255")))
        })
        .collect()
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
                if c.mask_aware {
                    write!(f, ",mask")?;
                }
                if c.grad_aware {
                    write!(f, ",grad")?;
                }
                if c.auto {
                    write!(f, ",auto")?;
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
