//! Round trips of the reference codec on small synthetic tensors: error bounds derived from the
//! bits, exact byte accounting under a budget, and input validation.

use super::quant::{hash, scale_value};
use super::*;
use crate::rules::config::{FdsrConfig, Rounding};
use crate::rules::format::TileClass;
use std::f32::consts::TAU;

/// Uniform float in [0, 1) from a counter.
fn unit(i: u32) -> f32 {
    (hash(i) >> 8) as f32 / (1u32 << 24) as f32
}

/// Smooth per-plane fields (a few low-frequency waves) shifted down by `offset` and ReLU'd.
pub(crate) fn smooth_relu(shape: &[usize], seed: u32, offset: f32) -> Vec<f32> {
    let (h, w) = (shape[2], shape[3]);
    let planes = shape[0] * shape[1];
    let mut x = Vec::with_capacity(planes * h * w);
    for p in 0..planes {
        let r = |k: u32| unit(seed.wrapping_mul(7919) ^ (p as u32 * 64 + k));
        let waves: Vec<[f32; 4]> = (0..3)
            .map(|k| [0.02 + 0.12 * r(4 * k), 0.02 + 0.12 * r(4 * k + 1), TAU * r(4 * k + 2), 0.5 + r(4 * k + 3)])
            .collect();
        for y in 0..h {
            for xx in 0..w {
                let v: f32 =
                    waves.iter().map(|[fy, fx, ph, a]| a * (TAU * (fy * y as f32 + fx * xx as f32) + ph).sin()).sum();
                x.push((v - offset).max(0.0));
            }
        }
    }
    x
}

fn rel_l2(x: &[f32], y: &[f32]) -> f64 {
    let e: f64 = x.iter().zip(y).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
    let n: f64 = x.iter().map(|a| (*a as f64).powi(2)).sum();
    (e / n).sqrt()
}

fn run(x: &[f32], shape: &[usize], policy: &str, rounding: Rounding) -> (Compressed, Vec<f32>) {
    let opts = CodecOptions { seed: 11, tensor_id: 5, rounding };
    let c = compress(x, shape, &policy.parse().unwrap(), &opts).unwrap();
    let y = decompress(&c).unwrap();
    assert_eq!(c.stored_bytes(), c.to_bytes().len(), "{policy}");
    (c, y)
}

#[test]
fn lossless_is_bit_exact() {
    let mut x: Vec<f32> = (0..300u32).map(|i| f32::from_bits(hash(i) & 0xbf7f_ffff)).collect();
    x.extend([-0.0, 0.0, 1e-45, -3.4e38, f32::MAX]);
    let shape = [x.len()];
    let (_, y) = run(&x, &shape, "lossless", Rounding::Stochastic);
    assert!(x.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn division_error_is_within_one_step() {
    let shape = [2, 3, 13, 20];
    let mut x = smooth_relu(&shape, 1, 0.2);
    x.iter_mut().enumerate().for_each(|(i, v)| *v += 0.05 * unit(i as u32 + 999));
    for rounding in [Rounding::Stochastic, Rounding::Nearest] {
        let (c, y) = run(&x, &shape, "division", rounding);
        let Body::Division(d) = &c.body else { panic!("division body expected") };
        let plane = 13 * 20;
        for (i, (a, b)) in x.iter().zip(&y).enumerate() {
            let step = scale_value(d.range_codes[i / plane], d.e0) / 3.0;
            let tol = if rounding == Rounding::Nearest { step / 2.0 } else { step };
            assert!((a - b).abs() <= tol * 1.001 + 1e-5, "value {i}: {a} vs {b}, step {step}");
        }
    }
}

/// Squared-error bound of one tile, coefficient domain, from what the encoder stored.
fn tile_bound(a: &fdsr::Analysis, f: &crate::rules::format::FdsrBody, t: usize, nearest: bool) -> f64 {
    let nb = f.bits.len();
    let zz = &a.coefs[t];
    let sq = |v: f32| (v as f64) * (v as f64);
    let band_bound = |j: usize, scale: f32| -> f64 {
        let band = &zz[f.band_edges[j] as usize..f.band_edges[j + 1] as usize];
        match f.bits[j] {
            0 => band.iter().map(|&c| sq(c)).sum(),
            16 => band.iter().map(|&c| sq(c.abs() * 1e-3 + 1e-7)).sum(),
            b => {
                let step = 2.0 * scale / ((1u32 << b) - 1) as f32;
                band.len() as f64 * sq(if nearest { step / 2.0 } else { step })
            }
        }
    };
    let dc_scale = scale_value(f.dc_codes[t / a.geometry.tiles_per_plane()], f.e0);
    match a.classes[t] {
        TileClass::Zero => 0.0,
        TileClass::DcOnly => band_bound(0, dc_scale) + zz[1..].iter().map(|&c| sq(c)).sum::<f64>(),
        _ => {
            let ac: f64 = (1..nb).map(|j| band_bound(j, quant::ac_scale(a.band_max[t * nb + j], f.e0))).sum();
            band_bound(0, dc_scale) + ac
        }
    }
}

#[test]
fn fdsr_tile_error_is_within_the_band_bounds() {
    let shape = [2, 3, 20, 27];
    let smooth = smooth_relu(&shape, 2, 0.3);
    let noisy: Vec<f32> = (0..smooth.len() as u32).map(|i| unit(i) * 4.0 - 1.0).collect();
    for x in [smooth, noisy] {
        for bits in ["8,4,3,2", "6,16,0,5", "16,2,1,0"] {
            for rounding in [Rounding::Stochastic, Rounding::Nearest] {
                let (c, y) = run(&x, &shape, &format!("fdsr:bits={bits}"), rounding);
                let Body::Fdsr(f) = &c.body else { panic!("fdsr body expected") };
                let a = fdsr::analyze(&x, &shape, &f.band_edges, crate::rules::config::DEFAULT_DC_THRESHOLD).unwrap();
                let g = a.geometry;
                for t in 0..g.tiles() {
                    let (p, ty, tx) = (t / g.tiles_per_plane(), (t / g.tiles_x) % g.tiles_y, t % g.tiles_x);
                    let mut err = 0f64;
                    for r in 0..8.min(g.h - ty * 8) {
                        for cc in 0..8.min(g.w - tx * 8) {
                            let i = p * g.h * g.w + (ty * 8 + r) * g.w + tx * 8 + cc;
                            err += ((x[i] - y[i]) as f64).powi(2);
                        }
                    }
                    let energy: f64 = a.coefs[t].iter().map(|&c| (c as f64).powi(2)).sum();
                    let bound = tile_bound(&a, f, t, rounding == Rounding::Nearest);
                    assert!(
                        err <= bound * 1.001 + 1e-9 * energy + 1e-10,
                        "{bits} {rounding:?} tile {t} ({:?}): err {err} > bound {bound}",
                        a.classes[t]
                    );
                }
            }
        }
    }
}

const BIG: [usize; 4] = [4, 8, 32, 32];

#[test]
fn fdsr_budget_2_fits_with_every_byte_counted() {
    let x = smooth_relu(&BIG, 3, 0.6);
    let zeros = x.iter().filter(|&&v| v == 0.0).count() as f64 / x.len() as f64;
    assert!((0.5..=0.8).contains(&zeros), "zero fraction {zeros}");
    let (c, _) = run(&x, &BIG, "fdsr:budget=2", Rounding::Stochastic);
    let Body::Fdsr(f) = &c.body else { panic!("fdsr body expected") };
    let cfg = FdsrConfig::default();
    let a = fdsr::analyze(&x, &BIG, &cfg.band_edges, cfg.dc_threshold).unwrap();
    assert_eq!(alloc::stored_bytes(&a.stats, &f.bits), c.stored_bytes());
    assert!(c.stored_bytes() * 8 <= 2 * x.len(), "{} bytes for {} values", c.stored_bytes(), x.len());
    assert!(c.ratio() >= 16.0);
    assert_eq!(c.bytes_by_part().iter().map(|p| p.1).sum::<usize>(), c.stored_bytes());
}

#[test]
fn fdsr_beats_uniform2_on_smooth_relu() {
    let x = smooth_relu(&BIG, 3, 0.6);
    let (cf, yf) = run(&x, &BIG, "fdsr:budget=2.1", Rounding::Stochastic);
    let (cu, yu) = run(&x, &BIG, "uniform:2", Rounding::Stochastic);
    let (ef, eu) = (rel_l2(&x, &yf), rel_l2(&x, &yu));
    assert!(
        ef < eu,
        "fdsr {} rel L2 {ef:.4} at {:.2}x vs uniform:2 {eu:.4} at {:.2}x",
        cf.policy_name(),
        cf.ratio(),
        cu.ratio()
    );
}

/// Prints ratio and relative L2 error of every policy (`cargo test --lib figures -- --nocapture`).
#[test]
fn figures() {
    let x = smooth_relu(&BIG, 3, 0.6);
    let zeros = x.iter().filter(|&&v| v == 0.0).count() as f64 / x.len() as f64;
    println!("smooth ReLU {BIG:?}, {:.1}% zeros", 100.0 * zeros);
    for p in [
        "lossless",
        "uniform:2",
        "uniform:4",
        "division",
        "fdsr",
        "fdsr:budget=2.1",
        "fdsr:bits=8,4,3,2",
        "fdsr:budget=4",
    ] {
        let (c, y) = run(&x, &BIG, p, Rounding::Stochastic);
        println!("{p:>18}: {:<22} ratio {:6.2}  rel L2 {:.4}", c.policy_name(), c.ratio(), rel_l2(&x, &y));
    }
}

#[test]
fn flat_path_on_low_rank() {
    let x: Vec<f32> = (0..3000u32).map(|i| (unit(i) - 0.3).max(0.0)).collect();
    let (c, _) = run(&x, &[30, 100], "fdsr:budget=3", Rounding::Nearest);
    let Body::Uniform(u) = &c.body else { panic!("uniform body expected") };
    assert_eq!(u.bits, alloc::flat_bits_for_budget(3000, 3.0).unwrap());
    assert!(c.stored_bytes() * 8 <= 3 * x.len());
    let (c, _) = run(&x, &[3000], "fdsr:bits=6,4,3,2", Rounding::Nearest);
    assert_eq!(c.policy_name(), "uniform:6");
}

#[test]
fn invalid_inputs_are_named_errors() {
    let opts = CodecOptions::default();
    let fd: Policy = "fdsr".parse().unwrap();
    let mut x = vec![1.0f32; 64];
    x[17] = f32::NAN;
    let e = compress(&x, &[64], &Policy::Lossless, &opts).unwrap_err().to_string();
    assert!(e.contains("index 17"), "{e}");
    assert!(compress(&[1.0; 6], &[2, 2], &fd, &opts).is_err());
    assert!(compress(&[], &[0], &fd, &opts).is_err());
    assert!(compress(&[1.0; 32], &[1, 2, 2, 2, 4], &fd, &opts).is_err());
    assert!(compress(&[1.0; 64], &[64], &Policy::Division, &opts).is_err());
    assert!(compress(&[1e37; 64], &[1, 1, 8, 8], &fd, &opts).is_err());
    assert!(compress(&[1e37; 64], &[64], &Policy::Lossless, &opts).is_ok());
    let tiny: Policy = "fdsr:budget=0.01".parse().unwrap();
    assert!(matches!(compress(&[1.0; 64], &[1, 1, 8, 8], &tiny, &opts), Err(FdsrError::BudgetTooLow { .. })));
}

#[test]
fn same_seed_same_bytes() {
    let shape = [1, 2, 16, 16];
    let x = smooth_relu(&shape, 4, 0.0);
    let p: Policy = "fdsr:bits=8,4,3,2".parse().unwrap();
    let o = CodecOptions { seed: 1, tensor_id: 2, rounding: Rounding::Stochastic };
    let a = compress(&x, &shape, &p, &o).unwrap();
    assert_eq!(a, compress(&x, &shape, &p, &o).unwrap());
    assert_ne!(a.to_bytes(), compress(&x, &shape, &p, &CodecOptions { seed: 2, ..o }).unwrap().to_bytes());
}
