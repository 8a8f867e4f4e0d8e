//! Parsing of policy strings (`uniform:2`, `fdsr:ratio=11,mask,grad`, …) and of the lists of
//! them that `fdsr compare` and `fdsr sweep` take.

use super::{BitChoice, DropWeight, FdsrConfig, Policy, ReuseConfig};
use crate::error::{FdsrError, Result};
use std::str::FromStr;

impl FromStr for Policy {
    type Err = FdsrError;
    /// Parses `lossless`, `uniform:B`, `division`, `fdsr`, `fdsr:budget=B`, `fdsr:ratio=R` (the
    /// budget `32 / R`) or `fdsr:bits=8,4,3,2`; the `fdsr` forms take trailing flags `,mask`
    /// (mask-aware: the ReLUs' masks re-applied; `,mask=zeros` also own masks of other tensors ≥ 0; `,mask=clamp` those and a clamp at 0; `,mask=shared` is `,mask`), `,grad` or `,grad=W` (gradient-aware allocation; W weighs the DC's and dropped bands' errors), `,drop=W` or `,drop=dc` (a dropped band's weight under `,grad`),
    /// `,realloc` (the probe shares the budget out per tensor), `,auto` (accuracy-following budget, reallocating), `,edges=0/1/…/64` (zig-zag band edges) and `,reuse` or `,reuse=K/B[/R]` (alone: `fdsr:mask`, `fdsr:reuse`, …).
    fn from_str(s: &str) -> Result<Self> {
        let (name, arg) = s.split_once(':').map_or((s, None), |(a, b)| (a, Some(b)));
        let bad = || {
            FdsrError::InvalidConfig(format!(
                "unknown policy '{s}' (expected lossless, uniform:B, division, fdsr[:budget=B|:ratio=R|:bits=D,L,M,H][,mask[=zeros|clamp]][,grad[=W]][,drop=W|dc][,realloc][,auto][,edges=0/1/../64][,reuse[=K/B/R]])"
            ))
        };
        let p = match (name, arg) {
            ("lossless", None) => Policy::Lossless,
            ("division", None) => Policy::Division,
            ("uniform", Some(b)) => Policy::Uniform { bits: b.parse().map_err(|_| bad())? },
            ("fdsr", None) => Policy::Fdsr(FdsrConfig::default()),
            ("fdsr", Some(a)) => {
                let mut c = FdsrConfig::default();
                let mut edges_given = false;
                let (a, flags) = split_flags(a);
                for flag in flags {
                    match flag.split_once('=').map_or((flag, None), |(k, v)| (k, Some(v))) {
                        ("mask", None | Some("shared")) => c.mask_aware = true,
                        ("mask", Some("zeros")) => (c.mask_aware, c.own_masks) = (true, true),
                        ("mask", Some("clamp")) => (c.mask_aware, c.mask_clamp, c.own_masks) = (true, true, true),
                        ("grad", None) => c.grad_aware = true,
                        ("grad", Some(w)) => {
                            c.grad_aware = true;
                            c.grad_weight = Some(w.parse().map_err(|_| bad())?);
                        }
                        ("drop", Some("dc")) => c.drop_weight = Some(DropWeight::Dc),
                        ("drop", Some(w)) => c.drop_weight = Some(DropWeight::Fixed(w.parse().map_err(|_| bad())?)),
                        ("realloc", None) => c.realloc = true,
                        ("auto", None) => (c.auto, c.realloc) = (true, true),
                        ("edges", Some(v)) => {
                            c.band_edges = parse_list(&v.replace('/', ","))?;
                            edges_given = true;
                        }
                        ("reuse", v) => c.reuse = Some(v.map_or(Ok(ReuseConfig::default()), ReuseConfig::parse)?),
                        _ => return Err(bad()),
                    }
                }
                if a.is_empty() && (c.reuse.is_some() || c.mask_aware || c.grad_aware || c.realloc) {
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
                if !edges_given {
                    c.band_edges = super::default_edges_for(&c.bits).to_vec();
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
    piece == "mask"
        || piece == "mask=zeros"
        || piece == "mask=shared"
        || piece == "mask=clamp"
        || piece == "grad"
        || piece.starts_with("grad=")
        || piece.starts_with("drop=")
        || piece == "auto"
        || piece == "realloc"
        || piece.starts_with("edges=")
        || piece == "reuse"
        || piece.starts_with("reuse=")
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
