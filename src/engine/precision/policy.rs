//! The precision policy strings and their parsing:
//! `static:fw=8,bw=16`,
//! `fractrain-pfq:fw=3,4,6,8;bw=6,6,8,8;window=5;threshold=0.05;decay=0.3;turns=3;checks=24;final=0.25;signal=train`,
//! `dpc:fw=8,4;bw=16,8`, `fractrain-dfq:fw=4,6,8;bw=6,8,8;target=0.45;alpha=1;tau=1`; every policy takes `full-ends=1|0` (first conv and last linear at 32 bits)
//! and `weights=1|0` (weights quantized to the forward bits, the default, or kept fp32).

use std::fmt;
use std::str::FromStr;

use super::pfq::Pfq;
use crate::error::{FdsrError, Result};

/// Dynamic fractional quantization options: the bit options a gate picks among per input.
#[derive(Clone, Debug, PartialEq)]
pub struct Dfq {
    /// Forward bits of each option, ascending (2 to 4 options).
    pub fw: Vec<u8>,
    /// Backward bits of each option, as many as `fw`.
    pub bw: Vec<u8>,
    /// Target of each gated layer's expected BitOPs, as a fraction of static fw=8/bw=16.
    pub target: f64,
    /// Weight of the cost regularizer `alpha·(R − target)²`.
    pub alpha: f64,
    /// Gumbel-softmax temperature of the gates in training.
    pub tau: f64,
}

impl Default for Dfq {
    fn default() -> Self {
        Dfq { fw: vec![4, 6, 8], bw: vec![6, 8, 8], target: 0.45, alpha: 1.0, tau: 1.0 }
    }
}

/// A precision policy for conv and linear compute.
#[derive(Clone, Debug, PartialEq)]
pub enum Precision {
    /// Fixed forward and backward bits.
    Static {
        /// Forward bits (activations and weights).
        fw: u8,
        /// Backward bits (output gradients).
        bw: u8,
        /// First conv and last linear stay at 32 bits.
        full_ends: bool,
        /// Weights are quantized to the forward bits too (else they stay fp32).
        weights: bool,
    },
    /// FracTrain progressive fractional quantization.
    Pfq {
        /// Stages and plateau rule.
        pfq: Pfq,
        /// First conv and last linear stay at 32 bits.
        full_ends: bool,
        /// Weights are quantized to the forward bits too (else they stay fp32).
        weights: bool,
    },
    /// Per-layer bits decreasing with capacity.
    Dpc {
        /// Forward bits from the least to the most capacity, `(hi, lo)`.
        fw: (u8, u8),
        /// Backward bits, `(hi, lo)`.
        bw: (u8, u8),
        /// First conv and last linear stay at 32 bits.
        full_ends: bool,
        /// Weights are quantized to the forward bits too (else they stay fp32).
        weights: bool,
    },
    /// FracTrain dynamic fractional quantization: per input, a gate picks the bits.
    Dfq {
        /// Bit options and the gates' training.
        dfq: Dfq,
        /// First conv and last linear stay at 32 bits.
        full_ends: bool,
        /// Weights are quantized too, at the largest forward option (else they stay fp32).
        weights: bool,
    },
}

impl Precision {
    /// Whether the first conv and the last linear stay at full precision.
    pub fn full_ends(&self) -> bool {
        match self {
            Precision::Static { full_ends, .. }
            | Precision::Pfq { full_ends, .. }
            | Precision::Dpc { full_ends, .. }
            | Precision::Dfq { full_ends, .. } => *full_ends,
        }
    }

    /// Whether weights are quantized (to the forward bits) as well as activations.
    pub fn weights(&self) -> bool {
        match self {
            Precision::Static { weights, .. }
            | Precision::Pfq { weights, .. }
            | Precision::Dpc { weights, .. }
            | Precision::Dfq { weights, .. } => *weights,
        }
    }
}

/// The options of `fractrain-pfq`.
const PFQ_KEYS: &str = "fw, bw, window, threshold, decay, turns, checks, final, signal, full-ends, weights";
/// The options of `fractrain-dfq`.
const DFQ_KEYS: &str = "fw, bw, target, alpha, tau, full-ends, weights";

fn bad(s: &str, why: impl fmt::Display) -> FdsrError {
    FdsrError::InvalidConfig(format!("precision policy '{s}': {why}"))
}

fn bits(s: &str, v: &str) -> Result<Vec<u8>> {
    let out: Vec<u8> = v
        .split(',')
        .map(|x| x.trim().parse::<u8>().map_err(|_| bad(s, format!("'{x}' is not a bit width"))))
        .collect::<Result<_>>()?;
    if let Some(b) = out.iter().find(|&&b| !(2..=16).contains(&b)) {
        return Err(bad(s, format!("bit width {b} is outside 2..=16")));
    }
    Ok(out)
}

fn one(s: &str, v: &str) -> Result<u8> {
    match bits(s, v)?.as_slice() {
        [b] => Ok(*b),
        _ => Err(bad(s, format!("'{v}' must be one bit width"))),
    }
}

fn pair(s: &str, v: &str) -> Result<(u8, u8)> {
    match bits(s, v)?.as_slice() {
        [hi, lo] if hi >= lo => Ok((*hi, *lo)),
        _ => Err(bad(s, format!("'{v}' must be two bit widths, largest first"))),
    }
}

fn num<T: FromStr>(s: &str, k: &str, v: &str) -> Result<T> {
    v.parse().map_err(|_| bad(s, format!("{k}='{v}' is not a number")))
}

impl FromStr for Precision {
    type Err = FdsrError;
    fn from_str(s: &str) -> Result<Self> {
        let (head, rest) = s.split_once(':').unwrap_or((s, ""));
        // Options are `;`-separated; in `static` the two keys may also be comma-separated.
        let mut opts: Vec<(String, String)> = Vec::new();
        for part in rest.split(';').filter(|p| !p.trim().is_empty()) {
            let Some((k, v)) = part.split_once('=') else {
                return Err(bad(s, format!("'{part}' is not key=value")));
            };
            if head == "static" && v.contains('=') {
                let (v1, more) = v.split_once(',').ok_or_else(|| bad(s, format!("'{part}' is malformed")))?;
                let (k2, v2) = more.split_once('=').ok_or_else(|| bad(s, format!("'{more}' is not key=value")))?;
                opts.push((k.trim().into(), v1.trim().into()));
                opts.push((k2.trim().into(), v2.trim().into()));
            } else {
                opts.push((k.trim().into(), v.trim().into()));
            }
        }
        let (mut full_ends, mut weights) = (true, true);
        let mut known = |k: &str, v: &str| -> Result<bool> {
            let flag = match k {
                "full-ends" => &mut full_ends,
                "weights" => &mut weights,
                _ => return Ok(false),
            };
            *flag = match v {
                "1" => true,
                "0" => false,
                _ => return Err(bad(s, format!("{k} must be 1 or 0"))),
            };
            Ok(true)
        };
        match head {
            "static" => {
                let (mut fw, mut bw) = (8, 16);
                for (k, v) in &opts {
                    match k.as_str() {
                        "fw" => fw = one(s, v)?,
                        "bw" => bw = one(s, v)?,
                        _ if known(k, v)? => {}
                        _ => return Err(bad(s, format!("unknown option '{k}' (fw, bw, full-ends, weights)"))),
                    }
                }
                Ok(Precision::Static { fw, bw, full_ends, weights })
            }
            "fractrain-pfq" => {
                let mut p = Pfq::default();
                let mut turns = None;
                for (k, v) in &opts {
                    match k.as_str() {
                        "fw" => p.fw = bits(s, v)?,
                        "bw" => p.bw = bits(s, v)?,
                        "window" => p.window = num(s, k, v)?,
                        "threshold" => p.threshold = num(s, k, v)?,
                        "decay" => p.decay = num(s, k, v)?,
                        "turns" => turns = Some(num(s, k, v)?),
                        "checks" => p.checks = num(s, k, v)?,
                        "final" => p.final_share = num(s, k, v)?,
                        "signal" => p.signal = v.parse().map_err(|e| bad(s, e))?,
                        _ if known(k, v)? => {}
                        _ => return Err(bad(s, format!("unknown option '{k}' ({PFQ_KEYS})"))),
                    }
                }
                if p.fw.len() != p.bw.len() || p.fw.is_empty() {
                    return Err(bad(s, "fw and bw need the same number of stages, at least one"));
                }
                if p.window < 2 {
                    return Err(bad(s, "window must be at least 2"));
                }
                if !(p.threshold > 0.0 && p.threshold < 1.0 && p.decay > 0.0 && p.decay <= 1.0) {
                    return Err(bad(s, "threshold must be in (0, 1) and decay in (0, 1]"));
                }
                if p.checks == 0 || !(0.0..1.0).contains(&p.final_share) {
                    return Err(bad(s, "checks must be at least 1 and final in [0, 1)"));
                }
                p.turns = turns.unwrap_or(p.fw.len() - 1);
                if p.turns > p.fw.len() - 1 {
                    return Err(bad(s, format!("turns {} exceeds the {} stage changes", p.turns, p.fw.len() - 1)));
                }
                Ok(Precision::Pfq { pfq: p, full_ends, weights })
            }
            "dpc" => {
                let (mut fw, mut bw) = ((8, 4), (16, 8));
                for (k, v) in &opts {
                    match k.as_str() {
                        "fw" => fw = pair(s, v)?,
                        "bw" => bw = pair(s, v)?,
                        _ if known(k, v)? => {}
                        _ => return Err(bad(s, format!("unknown option '{k}' (fw, bw, full-ends, weights)"))),
                    }
                }
                Ok(Precision::Dpc { fw, bw, full_ends, weights })
            }
            "fractrain-dfq" => {
                let mut d = Dfq::default();
                for (k, v) in &opts {
                    match k.as_str() {
                        "fw" => d.fw = bits(s, v)?,
                        "bw" => d.bw = bits(s, v)?,
                        "target" => d.target = num(s, k, v)?,
                        "alpha" => d.alpha = num(s, k, v)?,
                        "tau" => d.tau = num(s, k, v)?,
                        _ if known(k, v)? => {}
                        _ => return Err(bad(s, format!("unknown option '{k}' ({DFQ_KEYS})"))),
                    }
                }
                if d.fw.len() != d.bw.len() || !(2..=4).contains(&d.fw.len()) {
                    return Err(bad(s, "fw and bw need the same number of options, 2 to 4"));
                }
                if d.fw.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(bad(s, "fw options must be strictly ascending"));
                }
                if !(d.target > 0.0 && d.target.is_finite() && d.alpha >= 0.0 && d.alpha.is_finite()) {
                    return Err(bad(s, "target must be positive and alpha at least 0"));
                }
                if !(d.tau > 0.0 && d.tau.is_finite()) {
                    return Err(bad(s, "tau must be positive"));
                }
                Ok(Precision::Dfq { dfq: d, full_ends, weights })
            }
            _ => Err(bad(s, "expected static, fractrain-pfq, fractrain-dfq or dpc")),
        }
    }
}

fn list(b: &[u8]) -> String {
    b.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(",")
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ends =
            |e: bool, w: bool| format!("{}{}", if e { "" } else { ";full-ends=0" }, if w { "" } else { ";weights=0" });
        match self {
            Precision::Static { fw, bw, full_ends, weights } => {
                write!(f, "static:fw={fw};bw={bw}{}", ends(*full_ends, *weights))
            }
            Precision::Pfq { pfq: p, full_ends, weights } => write!(
                f,
                "fractrain-pfq:fw={};bw={};window={};threshold={};decay={};turns={};checks={};final={};signal={}{}",
                list(&p.fw),
                list(&p.bw),
                p.window,
                p.threshold,
                p.decay,
                p.turns,
                p.checks,
                p.final_share,
                p.signal,
                ends(*full_ends, *weights)
            ),
            Precision::Dpc { fw, bw, full_ends, weights } => {
                write!(f, "dpc:fw={},{};bw={},{}{}", fw.0, fw.1, bw.0, bw.1, ends(*full_ends, *weights))
            }
            Precision::Dfq { dfq: d, full_ends, weights } => write!(
                f,
                "fractrain-dfq:fw={};bw={};target={};alpha={};tau={}{}",
                list(&d.fw),
                list(&d.bw),
                d.target,
                d.alpha,
                d.tau,
                ends(*full_ends, *weights)
            ),
        }
    }
}

/// Splits a compare entry `PRECISION+SAVED` (e.g. `dpc+fdsr:budget=2`) into the precision policy
/// and the saved-activation policy text; an entry without `+` has no precision policy.
pub fn split_entry(entry: &str) -> Result<(Option<Precision>, &str)> {
    let head = entry.split(':').next().unwrap_or("");
    if ["static", "fractrain-pfq", "fractrain-dfq", "dpc"].contains(&head) || head.contains('+') {
        let (prec, saved) = entry.split_once('+').unwrap_or((entry, "none"));
        return Ok((Some(prec.parse()?), saved));
    }
    Ok((None, entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::precision::Signal;

    #[test]
    fn parses_and_round_trips() {
        for s in [
            "static:fw=8,bw=16",
            "static:fw=4;bw=8;full-ends=0",
            "fractrain-pfq",
            "fractrain-pfq:fw=3,4,6,8;bw=6,6,8,8;window=5;threshold=0.05;decay=0.3;turns=3",
            "fractrain-pfq:checks=40;final=0;signal=val",
            "fractrain-pfq:fw=4,8;bw=8,8",
            "dpc",
            "dpc:fw=8,4;bw=16,8",
            "dpc:weights=0;full-ends=0",
            "fractrain-pfq:fw=4,8;bw=8,8;weights=0",
            "fractrain-dfq",
            "fractrain-dfq:fw=4,8;bw=8,12;target=0.3;alpha=2;tau=0.5;full-ends=0",
        ] {
            let p: Precision = s.parse().unwrap();
            assert_eq!(p.to_string().parse::<Precision>().unwrap(), p, "{s}");
        }
        assert_eq!(
            "static:fw=8,bw=16".parse::<Precision>().unwrap(),
            Precision::Static { fw: 8, bw: 16, full_ends: true, weights: true }
        );
        let Precision::Pfq { pfq, .. } = "fractrain-pfq:fw=4,8;bw=8,8".parse().unwrap() else { panic!() };
        assert_eq!(pfq.turns, 1);
        assert_eq!((pfq.checks, pfq.final_share, pfq.signal), (24, 0.25, Signal::Train));
        let Precision::Pfq { pfq, .. } = "fractrain-pfq:checks=40;final=0;signal=val".parse().unwrap() else {
            panic!()
        };
        assert_eq!(pfq, Pfq { checks: 40, final_share: 0.0, signal: Signal::Val, ..Pfq::default() });
    }

    #[test]
    fn bad_strings_have_clear_errors() {
        for (s, want) in [
            ("fractrain", "expected static"),
            ("static:fw=8;bw=x", "not a bit width"),
            ("static:fw=1", "outside 2..=16"),
            ("static:gw=8", "unknown option 'gw'"),
            ("fractrain-pfq:fw=3,4;bw=8", "same number of stages"),
            ("fractrain-pfq:turns=4", "exceeds"),
            ("fractrain-pfq:window=1", "window"),
            ("fractrain-pfq:threshold=2", "threshold"),
            ("fractrain-pfq:checks=0", "checks must be at least 1"),
            ("fractrain-pfq:final=1", "final in [0, 1)"),
            ("fractrain-pfq:final=-0.1", "final in [0, 1)"),
            ("fractrain-pfq:signal=test", "signal must be train or val"),
            ("dpc:fw=4,8", "largest first"),
            ("dpc:fw", "key=value"),
            ("dpc:full-ends=2", "full-ends"),
            ("static:weights=yes", "weights must be 1 or 0"),
            ("fractrain-dfq:fw=4,6,8;bw=8,8", "same number of options"),
            ("fractrain-dfq:fw=2,3,4,5,6;bw=8,8,8,8,8", "2 to 4"),
            ("fractrain-dfq:fw=8,4;bw=8,8", "ascending"),
            ("fractrain-dfq:target=0", "target"),
            ("fractrain-dfq:tau=-1", "tau"),
            ("fractrain-dfq:gate=1", "unknown option 'gate'"),
        ] {
            let e = s.parse::<Precision>().unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(s), "{s}: {e}");
        }
    }

    #[test]
    fn compare_entries_split() {
        let (p, saved) = split_entry("dpc+fdsr:budget=2").unwrap();
        assert_eq!(p.unwrap().to_string(), "dpc:fw=8,4;bw=16,8");
        assert_eq!(saved, "fdsr:budget=2");
        let (p, saved) = split_entry("static:fw=8,bw=16").unwrap();
        assert!(p.is_some() && saved == "none");
        let (p, saved) = split_entry("fdsr:budget=2").unwrap();
        assert!(p.is_none() && saved == "fdsr:budget=2");
        assert!(split_entry("dpc:fw=9,99+none").is_err());
    }
}
