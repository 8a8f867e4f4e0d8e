//! The fdsr GPU path against the pure-Rust reference on realistic random inputs, and its compact
//! kernels against its default ones.

mod common;

use fdsr::bench::activations::{conv3x3_relu, smooth_images, Rng};
use fdsr::codec::api::{compress, decompress};
use fdsr::codec::config::{BitChoice, FdsrConfig};
use fdsr::codec::format::FdsrBody;
use fdsr::gpu::ContextOptions;
use fdsr::{reference, Body, CodecOptions, Compressed, Policy, Rounding};

fn relu_activation(shape: [usize; 4], seed: u32) -> Vec<f32> {
    let [n, c, h, w] = shape;
    conv3x3_relu(&smooth_images(n, h, w, seed), n, h, w, c, seed + 1)
}

fn noisy_activation(shape: [usize; 4], seed: u32) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    relu_activation(shape, seed).into_iter().map(|v| if v > 0.0 { v + 0.05 * rng.signed() } else { 0.0 }).collect()
}

fn fdsr_body(c: &Compressed) -> &FdsrBody {
    match &c.body {
        Body::Fdsr(f) => f,
        other => panic!("expected an fdsr body, got {other:?}"),
    }
}

/// GPU and reference encode the same tensor; returns (GPU, reference) compressed forms.
fn both(
    ctx: &fdsr::GpuContext,
    x: &[f32],
    shape: &[usize],
    p: &Policy,
    opts: &CodecOptions,
) -> (Compressed, Compressed) {
    let g = pollster::block_on(compress(ctx, x, shape, p, opts)).unwrap();
    let r = reference::compress(x, shape, p, opts).unwrap();
    (g, r)
}

/// Eight bands of other edges, one at 16 bits and one dropped (the kernels take the edges as
/// pipeline constants).
fn eight_bands() -> FdsrConfig {
    FdsrConfig {
        band_edges: vec![0, 1, 3, 6, 10, 15, 21, 36, 64],
        bits: BitChoice::Fixed(vec![8, 6, 16, 4, 0, 3, 2, 1]),
        ..Default::default()
    }
}

fn mismatch_fraction(a: &[u32], b: &[u32]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).filter(|(x, y)| x != y).count() as f64 / a.len().max(1) as f64
}

#[test]
fn gpu_encoding_matches_reference_with_fixed_bits() {
    let Some(ctx) = common::gpu() else { return };
    let cases: [([usize; 4], Policy); 5] = [
        ([2, 3, 16, 16], "fdsr:bits=8,4,3,2".parse().unwrap()),
        ([1, 2, 13, 19], "fdsr:bits=8,5,3,1".parse().unwrap()),
        ([3, 4, 32, 32], "fdsr:bits=16,8,4,0".parse().unwrap()),
        ([2, 2, 24, 40], "fdsr:bits=6,16,2,2".parse().unwrap()),
        ([2, 3, 24, 16], Policy::Fdsr(eight_bands())),
    ];
    for (i, (shape, policy)) in cases.iter().enumerate() {
        let (shape, policy) = (*shape, policy);
        for rounding in [Rounding::Stochastic, Rounding::Nearest] {
            let x = noisy_activation(shape, 10 + i as u32);
            let opts = CodecOptions { seed: 7, tensor_id: 3, rounding };
            let (g, r) = both(&ctx, &x, &shape, policy, &opts);
            let (gb, rb) = (fdsr_body(&g), fdsr_body(&r));
            assert_eq!(gb.e0, rb.e0, "{policy} {shape:?}: e0");
            assert_eq!(gb.dc_codes, rb.dc_codes, "{policy} {shape:?}: per-plane DC codes");
            // Classes and words may differ only where the DCT's float rounding differs: rare.
            let class_diff = mismatch_fraction(&gb.classes, &rb.classes);
            assert!(class_diff <= 0.01, "{policy} {shape:?}: {class_diff} of class words differ");
            if gb.classes == rb.classes {
                let word_diff = mismatch_fraction(&gb.payload, &rb.payload);
                assert!(word_diff <= 0.01, "{policy} {shape:?}: {word_diff} of payload words differ");
            }
            let gd = pollster::block_on(decompress(&ctx, &g)).unwrap();
            let rd = reference::decompress(&r).unwrap();
            let peak = x.iter().fold(0f32, |m, v| m.max(v.abs()));
            let off = gd.iter().zip(&rd).filter(|(a, b)| (*a - *b).abs() > 1e-4 * peak).count();
            assert!(off * 100 <= x.len(), "{policy} {shape:?}: {off} of {} decoded values differ", x.len());
        }
    }
}

#[test]
fn bands_far_below_the_tensor_maximum_are_zero_not_noise() {
    let Some(ctx) = common::gpu() else { return };
    // Plane 0 sets e0; the other planes sit 2^-12 and 2^-16 below it, under the lowest AC code.
    let shape = [1, 3, 32, 32];
    let mut x = noisy_activation(shape, 60);
    let plane = 32 * 32;
    for (p, f) in [(1, 2f32.powi(-12)), (2, 2f32.powi(-16))] {
        x[p * plane..(p + 1) * plane].iter_mut().for_each(|v| *v *= f);
    }
    let p: Policy = "fdsr:bits=8,3,3,3".parse().unwrap();
    for rounding in [Rounding::Stochastic, Rounding::Nearest] {
        let opts = CodecOptions { seed: 7, tensor_id: 3, rounding };
        let (g, r) = both(&ctx, &x, &shape, &p, &opts);
        assert_eq!(fdsr_body(&g).classes, fdsr_body(&r).classes);
        assert!(mismatch_fraction(&fdsr_body(&g).payload, &fdsr_body(&r).payload) <= 0.01);
        let gd = pollster::block_on(decompress(&ctx, &g)).unwrap();
        let rd = reference::decompress(&r).unwrap();
        for (who, d) in [("GPU", &gd), ("reference", &rd)] {
            for q in 1..3 {
                let (xs, ds) = (&x[q * plane..(q + 1) * plane], &d[q * plane..(q + 1) * plane]);
                let err: f64 = xs.iter().zip(ds).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
                let norm: f64 = xs.iter().map(|&a| (a as f64).powi(2)).sum();
                // Dropped AC is at most the plane itself; rounding at the lowest scale gave 50 times it.
                assert!(err <= norm, "{who} {rounding:?} plane {q}: squared error {err:e} over {norm:e}");
            }
        }
    }
}

#[test]
fn gpu_decoder_reads_reference_bytes() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [2, 4, 21, 27];
    let x = noisy_activation(shape, 40);
    let p: Policy = "fdsr:bits=8,4,3,2".parse().unwrap();
    let r = reference::compress(&x, &shape, &p, &CodecOptions::default()).unwrap();
    let parsed = Compressed::from_bytes(&r.to_bytes()).unwrap();
    let gd = pollster::block_on(decompress(&ctx, &parsed)).unwrap();
    let rd = reference::decompress(&r).unwrap();
    let worst = gd.iter().zip(&rd).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    let peak = rd.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(worst <= 1e-5 * peak.max(1.0), "GPU decode of reference bytes off by {worst}");
}

#[test]
fn budget_choice_and_ratio_agree_with_reference() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [4, 8, 32, 32];
    let x = relu_activation(shape, 50);
    let eight = |b: f64| {
        let edges = vec![0, 1, 3, 6, 10, 15, 21, 36, 64];
        Policy::Fdsr(FdsrConfig { band_edges: edges, bits: BitChoice::Budget(b), ..Default::default() })
    };
    let parsed = |s: &str| s.parse::<Policy>().unwrap();
    let cases = [
        (1.0, parsed("fdsr:budget=1")),
        (2.0, parsed("fdsr:budget=2")),
        (3.0, parsed("fdsr:budget=3")),
        (2.5, eight(2.5)),
    ];
    for (limit, budget) in cases {
        let (g, r) = both(&ctx, &x, &shape, &budget, &CodecOptions::default());
        assert_eq!(fdsr_body(&g).bits, fdsr_body(&r).bits, "{budget}: chosen bits");
        let rel = (g.ratio() - r.ratio()).abs() / r.ratio();
        assert!(rel < 0.005, "{budget}: GPU ratio {} vs reference {}", g.ratio(), r.ratio());
        let bpv = g.stored_bytes() as f64 * 8.0 / x.len() as f64;
        assert!(bpv <= limit, "{budget}: stored {bpv} bits/value");
    }
}

#[test]
fn chunked_processing_gives_the_same_bytes() {
    let Some(ctx) = common::gpu() else { return };
    let Some(small) =
        common::gpu_with(ContextOptions { max_binding_bytes: Some(3 * 20 * 20 * 4), ..Default::default() })
    else {
        return;
    };
    let shape = [3, 4, 20, 20];
    let x = noisy_activation(shape, 60);
    let p: Policy = "fdsr:budget=2".parse().unwrap();
    let opts = CodecOptions { seed: 11, ..Default::default() };
    let whole = pollster::block_on(compress(&ctx, &x, &shape, &p, &opts)).unwrap();
    let chunked = pollster::block_on(compress(&small, &x, &shape, &p, &opts)).unwrap();
    assert_eq!(whole, chunked);
    let a = pollster::block_on(decompress(&ctx, &whole)).unwrap();
    let b = pollster::block_on(decompress(&small, &whole)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn compact_kernels_give_the_same_bytes_and_values() {
    let Some(ctx) = common::gpu() else { return };
    let Some(compact) = common::gpu_with(ContextOptions { compact_shaders: true, ..Default::default() }) else {
        return;
    };
    let cases: [([usize; 4], Policy); 5] = [
        ([2, 3, 16, 16], "fdsr:bits=8,4,3,2".parse().unwrap()),
        ([3, 4, 32, 32], "fdsr:bits=16,8,4,0".parse().unwrap()),
        ([2, 2, 24, 40], "fdsr:bits=6,16,2,2".parse().unwrap()),
        ([2, 3, 24, 16], Policy::Fdsr(eight_bands())),
        ([4, 8, 16, 16], "fdsr:budget=2,reuse".parse().unwrap()),
    ];
    for (i, (shape, policy)) in cases.iter().enumerate() {
        for rounding in [Rounding::Stochastic, Rounding::Nearest] {
            let x = noisy_activation(*shape, 70 + i as u32);
            let opts = CodecOptions { seed: 5, tensor_id: 2, rounding };
            let a = pollster::block_on(compress(&ctx, &x, shape, policy, &opts)).unwrap();
            let b = pollster::block_on(compress(&compact, &x, shape, policy, &opts)).unwrap();
            assert_eq!(a, b, "{policy} {shape:?} {rounding:?}");
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            let da = bits(pollster::block_on(decompress(&ctx, &a)).unwrap());
            let db = bits(pollster::block_on(decompress(&compact, &a)).unwrap());
            assert_eq!(da, db, "{policy} {shape:?} {rounding:?}: decoded values");
        }
    }
}

#[test]
fn grad_weight_follows_the_budget() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [4, 8, 32, 32];
    let x = noisy_activation(shape, 91);
    let opts = CodecOptions { seed: 3, tensor_id: 1, rounding: Rounding::Stochastic };
    // The four bands DC, low, mid, high, where this tensor's bits depend on the weight.
    let bits = |p: String| {
        let p = format!("{p},edges=0/1/6/28/64");
        let c = pollster::block_on(compress(&ctx, &x, &shape, &p.parse().unwrap(), &opts)).unwrap();
        fdsr_body(&c).bits.clone()
    };
    // `,grad` weighs coherent errors 8 up to 2.25 bits per value and 64 from 3.25 bits.
    for (budget, weight) in [(1.5, 8), (2.0, 8), (2.25, 8), (3.25, 64), (4.0, 64)] {
        let rule = bits(format!("fdsr:budget={budget},grad"));
        assert_eq!(rule, bits(format!("fdsr:budget={budget},grad={weight}")), "budget {budget}: weight {weight}");
    }
    // At low budgets the weight decides bits on this tensor, so the rule's weight is really used.
    for budget in [2.0, 2.25] {
        let (w8, w64) = (bits(format!("fdsr:budget={budget},grad=8")), bits(format!("fdsr:budget={budget},grad=64")));
        assert_ne!(w8, w64, "budget {budget}");
    }
}

/// Every code at 16 bits (f16 pass-through) on tiles whose scales run from far below f16's
/// subnormals to past its largest value: the shaders' branch-free f16 rounding (ties to even,
/// subnormals, saturation) against the reference's. Exact where the DCT's rounding is the
/// reference's (lavapipe); elsewhere a rare word may differ with the DCT.
#[test]
fn f16_codes_match_the_reference_across_the_range() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [4usize, 16, 64, 64];
    let mut rng = Rng::new(5);
    // Tile (plane p, row y / 8, column x / 8) scaled by 2^(-34 + its index mod 53).
    let tile_scale = |i: usize| {
        let (p, y, x) = (i / 4096, i / 64 % 64, i % 64);
        2f32.powi(-34 + ((p * 64 + y / 8 * 8 + x / 8) % 53) as i32)
    };
    let x: Vec<f32> = (0..shape.iter().product::<usize>()).map(|i| tile_scale(i) * rng.signed()).collect();
    let policy: Policy = "fdsr:bits=16,16,16,16".parse().unwrap();
    let opts = CodecOptions { seed: 1, tensor_id: 0, rounding: Rounding::Nearest };
    let (g, r) = both(&ctx, &x, &shape, &policy, &opts);
    let (gb, rb) = (fdsr_body(&g), fdsr_body(&r));
    let exact = ctx.adapter_description().contains("llvmpipe");
    let allowed = if exact { 0.0 } else { 0.01 };
    assert!(mismatch_fraction(&gb.classes, &rb.classes) <= allowed, "class words differ");
    assert!(mismatch_fraction(&gb.payload, &rb.payload) <= allowed, "payload words differ");
    let gd = pollster::block_on(decompress(&ctx, &g)).unwrap();
    let rd = reference::decompress(&r).unwrap();
    let off = gd.iter().zip(&rd).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    assert!(off as f64 <= allowed * x.len() as f64, "{off} of {} decoded values differ", x.len());
}
