//! Similarity reuse in the pure-Rust reference: identical tiles are always found, verification
//! never accepts a tile outside its bound, reused tiles stay within the stated error bound.

mod common;

use fdsr::bench::activations::Rng;
use fdsr::codec::config::ReuseConfig;
use fdsr::reference::fdsr::analyze;
use fdsr::reference::quant::{ac_scale, e0_for, encode_scale, scale_value};
use fdsr::reference::reuse::{self, verify};
use fdsr::{reference, Body, CodecOptions, Policy, Rounding, TileClass};
use std::collections::HashSet;

const EDGES: [u8; 5] = [0, 1, 6, 28, 64];

#[test]
fn identical_tiles_always_become_references() {
    for (i, shape) in [[2, 4, 16, 16], [3, 3, 21, 27]].into_iter().enumerate() {
        let (x, _) = common::with_duplicates(shape, 70 + i as u32, 40, 0.0);
        for policy in ["fdsr:bits=8,4,3,2,reuse", "fdsr:bits=8,4,3,16,reuse=8/12/2"] {
            let p: Policy = policy.parse().unwrap();
            let (c, st) = reference::compress_with_stats(&x, &shape, &p, &CodecOptions::default()).unwrap();
            let Body::Fdsr(f) = &c.body else { panic!("not fdsr") };
            let a = analyze(&x, &shape, &EDGES, fdsr::codec::config::DEFAULT_DC_THRESHOLD).unwrap();
            let mut seen: HashSet<Vec<u32>> = HashSet::new();
            let mut dups = 0;
            for (t, cls) in a.classes.iter().enumerate() {
                if *cls != TileClass::Full {
                    continue;
                }
                let bits: Vec<u32> = a.coefs[t].iter().map(|v| v.to_bits()).collect();
                if !seen.insert(bits) {
                    dups += 1;
                    assert_eq!(f.class(t), TileClass::Reference, "{policy} {shape:?}: duplicate tile {t} not reused");
                }
            }
            assert!(dups >= 10, "{shape:?}: only {dups} duplicates made");
            let st = st.unwrap();
            assert_eq!(st.hits as usize, f.refs.len());
            assert_eq!(st.rejected, st.candidates - st.hits);
            assert!(st.hits >= dups);
        }
    }
}

/// A random tile of coefficients with a spread of magnitudes.
fn random_coefs(rng: &mut Rng) -> [f32; 64] {
    let mut c = [0f32; 64];
    let scale = 10f32.powf(rng.signed() * 3.0);
    for (z, v) in c.iter_mut().enumerate() {
        *v = rng.signed() * scale / (1.0 + z as f32 * 0.2);
    }
    c
}

#[test]
fn verification_never_accepts_outside_the_bound() {
    let mut rng = Rng::new(5);
    let (mut accepted, mut tried) = (0, 0);
    for case in 0..4000 {
        let bits: &[u8] = match case % 3 {
            0 => &[8, 4, 3, 2],
            1 => &[6, 2, 1, 0],
            _ => &[8, 8, 5, 3],
        };
        let cs = random_coefs(&mut rng);
        let gmax = cs.iter().fold(0f32, |a, c| a.max(c.abs())) * 1.5;
        let e0 = e0_for(gmax);
        let dc_scale = scale_value(encode_scale(cs[0].abs() * (1.0 + rng.uniform()), e0), e0);
        // Adversarial near-misses: two coefficients moved to within a few ulps of their bound,
        // the others to 0.3 of theirs.
        let (za, zb) = ((rng.next_u32() % 64) as usize, (rng.next_u32() % 64) as usize);
        let mut ct = cs;
        let mut bounds = [0f64; 64];
        for j in 0..bits.len() {
            let (lo, hi) = (EDGES[j] as usize, EDGES[j + 1] as usize);
            let scale =
                if j == 0 { dc_scale } else { ac_scale(cs[lo..hi].iter().fold(0f32, |a, c| a.max(c.abs())), e0) };
            let l = ((1u32 << bits[j]) - 1) as f64;
            for z in lo..hi {
                bounds[z] = if bits[j] == 0 { f64::INFINITY } else { scale as f64 / l };
                let frac = match if z == za || z == zb { rng.next_u32() % 3 + 1 } else { 0 } {
                    0 => 0.3,
                    1 => 1.0 - 2e-6 * rng.uniform() as f64,
                    2 => 1.0 + 1e-7 * rng.signed() as f64,
                    _ => 1.0 + 2e-6 * rng.uniform() as f64,
                };
                let d = if bits[j] == 0 { 5.0 * cs[z] as f64 } else { bounds[z] * frac };
                let sign = if rng.next_u32().is_multiple_of(2) { 1.0 } else { -1.0 };
                ct[z] = (cs[z] as f64 + sign * d) as f32;
            }
        }
        tried += 1;
        if verify(&ct, &cs, dc_scale, &EDGES, bits, e0) {
            accepted += 1;
            for z in 0..64 {
                let d = (ct[z] as f64 - cs[z] as f64).abs();
                assert!(d <= bounds[z], "case {case}: coefficient {z} off by {d:e} > bound {:e}", bounds[z]);
            }
        }
        // Well inside the bound is always accepted.
        let mut inside = cs;
        for z in 1..64 {
            if bounds[z].is_finite() {
                inside[z] = (cs[z] as f64 + 0.5 * bounds[z]) as f32;
            }
        }
        assert!(verify(&inside, &cs, dc_scale, &EDGES, bits, e0), "case {case}: half-bound tile rejected");
    }
    assert!(accepted > 0 && accepted < tried, "{accepted} of {tried} accepted: no adversarial coverage");
}

#[test]
fn reused_tiles_stay_within_the_error_bound() {
    let shape = [2, 4, 24, 24];
    let (x, _) = common::with_duplicates(shape, 90, 60, 1e-3);
    let bits = [8u8, 4, 3, 2];
    let a = analyze(&x, &shape, &EDGES, fdsr::codec::config::DEFAULT_DC_THRESHOLD).unwrap();
    let e0 = e0_for(a.stats.gmax);
    let per_plane = a.geometry.tiles_per_plane();
    for rounding in [Rounding::Stochastic, Rounding::Nearest] {
        let p: Policy = "fdsr:bits=8,4,3,2,reuse".parse().unwrap();
        let opts = CodecOptions { seed: 3, tensor_id: 1, rounding };
        let (c, st) = reference::compress_with_stats(&x, &shape, &p, &opts).unwrap();
        let st = st.unwrap();
        assert!(st.hits >= 20, "{rounding:?}: only {} hits", st.hits);
        let Body::Fdsr(f) = &c.body else { panic!("not fdsr") };
        let y = reference::decompress(&c).unwrap();
        // Quantization error per coefficient: under a step for stochastic, half a step for nearest.
        let q = if rounding == Rounding::Stochastic { 2.0 } else { 1.0 };
        let mut refs = f.refs.iter();
        let basis = fdsr::reference::dct::dct_basis();
        for t in 0..a.classes.len() {
            if f.class(t) != TileClass::Reference {
                continue;
            }
            let s = *refs.next().unwrap() as usize;
            let (ct, cs) = (&a.coefs[t], &a.coefs[s]);
            let mut bound2 = 0f64;
            for j in 0..bits.len() {
                let (lo, hi) = (EDGES[j] as usize, EDGES[j + 1] as usize);
                let scale = if j == 0 {
                    scale_value(encode_scale(a.plane_dcmax[s / per_plane], e0), e0)
                } else {
                    ac_scale(a.band_max[s * bits.len() + j], e0)
                };
                let l = ((1u32 << bits[j]) - 1) as f64;
                // |c_t − ĉ_s| ≤ |c_t − c_s| + |c_s − ĉ_s| ≤ scale/L + q·scale/L.
                bound2 += (hi - lo) as f64 * ((1.0 + q) * scale as f64 / l).powi(2);
            }
            let (p, r) = (t / per_plane, t % per_plane);
            let (ty, tx) = (r / a.geometry.tiles_x, r % a.geometry.tiles_x);
            let plane = &y[p * 24 * 24..(p + 1) * 24 * 24];
            let decoded = fdsr::reference::dct::extract_tile(plane, 24, 24, ty, tx);
            let original = fdsr::reference::dct::inverse(&fdsr::reference::dct::from_zigzag(ct), &basis);
            let err2: f64 = decoded.iter().zip(&original).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
            let slack = 1e-5 * cs.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
            assert!(
                err2.sqrt() <= bound2.sqrt() + slack,
                "tile {t} (ref of {s}): error {} > {}",
                err2.sqrt(),
                bound2.sqrt()
            );
        }
    }
}

#[test]
fn reuse_never_costs_bytes_and_keeps_the_budget() {
    let shape = [4, 4, 16, 16];
    let (x, _) = common::with_duplicates(shape, 30, 30, 1e-4);
    for base in ["fdsr:budget=2", "fdsr:budget=3", "fdsr:bits=8,4,3,2", "fdsr:bits=2,0,0,0"] {
        let off = reference::compress(&x, &shape, &base.parse().unwrap(), &CodecOptions::default()).unwrap();
        let on_p: Policy = format!("{base},reuse").parse().unwrap();
        let on = reference::compress(&x, &shape, &on_p, &CodecOptions::default()).unwrap();
        assert!(on.stored_bytes() <= off.stored_bytes(), "{base}: {} > {}", on.stored_bytes(), off.stored_bytes());
        if let Some(b) = base.strip_prefix("fdsr:budget=") {
            assert!(on.stored_bytes() as f64 * 8.0 / x.len() as f64 <= b.parse::<f64>().unwrap());
        }
        let back = fdsr::Compressed::from_bytes(&on.to_bytes()).unwrap();
        assert_eq!(back, on);
        reference::decompress(&back).unwrap();
    }
    // Signatures are deterministic in the seed and differ between seeds.
    assert_eq!(reuse::hyperplanes(1, 16), reuse::hyperplanes(1, 16));
    assert_ne!(reuse::hyperplanes(1, 16), reuse::hyperplanes(2, 16));
    assert!(reuse::hyperplanes(9, 24).iter().all(|h| (-1.0..1.0).contains(h)));
    let _ = ReuseConfig::default();
}
