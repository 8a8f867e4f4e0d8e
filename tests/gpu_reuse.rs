//! Similarity reuse on the GPU against the reference: signatures, hit rates, references, decode.

mod common;

use fdsr::codec::api::{compress_with_stats, decompress};
use fdsr::codec::config::{FdsrConfig, ReuseConfig};
use fdsr::gpu::kernel::storage_init;
use fdsr::gpu::ContextOptions;
use fdsr::reference::fdsr::analyze;
use fdsr::reference::reuse::{self, hyperplanes, projection, tile_key};
use fdsr::{reference, Body, CodecOptions, Compressed, Policy, TileClass};

const EDGES: [u8; 5] = [0, 1, 6, 28, 64];

fn fdsr_cfg(p: &Policy) -> &FdsrConfig {
    match p {
        Policy::Fdsr(c) => c,
        _ => panic!("not fdsr"),
    }
}

fn body(c: &Compressed) -> &fdsr::codec::format::FdsrBody {
    match &c.body {
        Body::Fdsr(f) => f,
        _ => panic!("not fdsr"),
    }
}

#[test]
fn signatures_match_the_reference_up_to_rounding_near_zero() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [3, 4, 24, 21];
    let (x, _) = common::with_duplicates(shape, 11, 30, 1e-3);
    let p: Policy = "fdsr:bits=8,4,3,2,reuse=20/20/4".parse().unwrap();
    let cfg = fdsr_cfg(&p);
    let r = cfg.reuse.unwrap();
    let opts = CodecOptions { seed: 9, ..Default::default() };
    let input = storage_init(&ctx, "x", bytemuck::cast_slice(&x));
    let keys = pollster::block_on(fdsr::codec::file::reuse_keys(&ctx, &input, &shape, cfg, &opts)).unwrap();
    let a = analyze(&x, &shape, &EDGES, cfg.dc_threshold).unwrap();
    let h = hyperplanes(opts.seed, r.bits);
    let (mut full, mut flips) = (0, 0);
    for (t, &gkey) in keys.iter().enumerate() {
        if a.classes[t] != TileClass::Full || gkey == 0 {
            continue; // GPU and reference may classify a borderline tile differently
        }
        full += 1;
        let want = tile_key(&h, &a.coefs[t], &r);
        let diff = want ^ gkey;
        if diff == 0 {
            continue;
        }
        flips += 1;
        assert_eq!(diff >> 20, 0, "tile {t}: magnitude keys differ ({want:#x} vs {gkey:#x})");
        for i in (0..r.bits as usize).filter(|&i| diff >> i & 1 == 1) {
            let proj = projection(&h, i, &a.coefs[t], r.leading as usize);
            let size: f32 = (1..=r.leading as usize).map(|z| (h[i * 64 + z] * a.coefs[t][z]).abs()).sum();
            assert!(proj.abs() <= 1e-4 * size, "tile {t} bit {i}: projection {proj:e} of {size:e} is not near zero");
        }
    }
    assert!(full > 50, "only {full} full tiles");
    assert!(flips * 20 <= full, "{flips} of {full} signatures differ");
}

#[test]
fn hits_and_references_agree_with_the_reference() {
    let Some(ctx) = common::gpu() else { return };
    for (i, (shape, policy)) in [
        ([2, 4, 16, 16], "fdsr:bits=8,4,3,2,reuse"),
        ([3, 3, 21, 27], "fdsr:budget=3,reuse"),
        ([2, 3, 24, 24], "fdsr:bits=8,6,16,2,reuse=12/16/2"),
    ]
    .into_iter()
    .enumerate()
    {
        let (x, _) = common::with_duplicates(shape, 20 + i as u32, 80, if i == 1 { 1e-3 } else { 0.0 });
        let p: Policy = policy.parse().unwrap();
        let opts = CodecOptions { seed: 4, tensor_id: 2, ..Default::default() };
        let (g, gs) = pollster::block_on(compress_with_stats(&ctx, &x, &shape, &p, &opts)).unwrap();
        let (r, rs) = reference::compress_with_stats(&x, &shape, &p, &opts).unwrap();
        let (gs, rs) = (gs.unwrap(), rs.unwrap());
        assert!(rs.hits >= 5, "{policy}: reference found only {} hits", rs.hits);
        eprintln!("{policy} {shape:?}: GPU {gs:?}, reference {rs:?}");
        assert_eq!(gs.hits as usize, body(&g).refs.len());
        let slack = 2 + rs.eligible / 50;
        assert!(gs.hits.abs_diff(rs.hits) <= slack, "{policy}: GPU {gs:?} vs reference {rs:?}");
        assert!(gs.candidates.abs_diff(rs.candidates) <= 2 * slack, "{policy}: GPU {gs:?} vs reference {rs:?}");
        if body(&g).classes == body(&r).classes {
            assert_eq!(body(&g).refs, body(&r).refs, "{policy}: same classes but different references");
        }
        // Duplicated-exactly tiles are found by the GPU too.
        if i == 0 {
            let a = analyze(&x, &shape, &EDGES, 1e-3).unwrap();
            for t in 0..a.classes.len() {
                let dup = (0..t).any(|u| a.classes[u] == TileClass::Full && a.coefs[u] == a.coefs[t]);
                if a.classes[t] == TileClass::Full && dup {
                    assert_eq!(body(&g).class(t), TileClass::Reference, "GPU missed duplicate tile {t}");
                }
            }
        }
        // The GPU decoder reproduces the reference decoder on both encodings.
        for c in [&g, &r] {
            let parsed = Compressed::from_bytes(&c.to_bytes()).unwrap();
            let gd = pollster::block_on(decompress(&ctx, &parsed)).unwrap();
            let rd = reference::decompress(&parsed).unwrap();
            let peak = rd.iter().fold(0f32, |m, v| m.max(v.abs()));
            let worst = gd.iter().zip(&rd).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-5 * peak.max(1.0), "{policy}: GPU decode off by {worst}");
        }
    }
}

#[test]
fn references_stay_inside_chunks_and_decode_across_them() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [3, 4, 20, 20];
    let Some(small) =
        common::gpu_with(ContextOptions { max_binding_bytes: Some(5 * 20 * 20 * 4), ..Default::default() })
    else {
        return;
    };
    let (x, _) = common::with_duplicates(shape, 60, 50, 0.0);
    let p: Policy = "fdsr:bits=8,4,3,2,reuse".parse().unwrap();
    let opts = CodecOptions { seed: 1, ..Default::default() };
    let (chunked, cs) = pollster::block_on(compress_with_stats(&small, &x, &shape, &p, &opts)).unwrap();
    let (whole, ws) = pollster::block_on(compress_with_stats(&ctx, &x, &shape, &p, &opts)).unwrap();
    let (cs, ws) = (cs.unwrap(), ws.unwrap());
    assert!(cs.hits > 0 && ws.hits >= cs.hits, "chunked {cs:?} vs whole {ws:?}");
    // The reference with the same chunks finds the same references.
    let mut a = analyze(&x, &shape, &EDGES, 1e-3).unwrap();
    let chunk_planes = 5;
    let rs = reuse::apply(&mut a, &ReuseConfig::default(), opts.seed, &[8, 4, 3, 2], chunk_planes);
    assert!(cs.hits.abs_diff(rs.hits) <= 2, "chunked GPU {cs:?} vs reference {rs:?}");
    let per_chunk = chunk_planes * 9;
    let mut next = body(&chunked).refs.iter();
    for t in (0..a.classes.len()).filter(|&t| body(&chunked).class(t) == TileClass::Reference) {
        let s = *next.next().unwrap() as usize;
        assert_eq!(s / per_chunk, t / per_chunk, "reference {t} -> {s} crosses a chunk");
    }
    // Whole-tensor references decoded on the small device (host fallback) and the big one agree.
    let a1 = pollster::block_on(decompress(&ctx, &whole)).unwrap();
    let a2 = pollster::block_on(decompress(&small, &whole)).unwrap();
    let peak = a1.iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = a1.iter().zip(&a2).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(worst <= 1e-5 * peak.max(1.0), "decode across chunks off by {worst}");
}
