//! Helpers shared by the GPU integration tests: a context, or a skip when there is no adapter.
#![allow(dead_code)]

use fdsr::gpu::ContextOptions;
use fdsr::GpuContext;

/// A GPU context on the default adapter, or `None` (after printing why) when there is none.
///
/// With `REQUIRE_GPU=1` a missing adapter is a failure instead of a skip.
pub fn gpu() -> Option<GpuContext> {
    gpu_with(ContextOptions::default())
}

/// Like [`gpu`], with explicit context options (e.g. a small binding limit to force chunking).
pub fn gpu_with(opts: ContextOptions) -> Option<GpuContext> {
    match pollster::block_on(GpuContext::with_options(opts)) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("REQUIRE_GPU=1 but no GPU context: {e}");
            }
            eprintln!("skipping: no GPU adapter ({e})");
            None
        }
    }
}

/// A ReLU activation of `shape` (conv 3x3 + ReLU of smooth images) with tile duplicates: `copies`
/// times, the 8x8 block of a random tile is copied (visible pixels, plus `noise` relative
/// perturbation of its non-zero values) onto another tile of the same position in another plane,
/// so that edge tiles stay edge tiles. Returns the tensor and the (source, destination) tiles.
pub fn with_duplicates(shape: [usize; 4], seed: u32, copies: usize, noise: f32) -> (Vec<f32>, Vec<(usize, usize)>) {
    use fdsr::bench::activations::{conv3x3_relu, smooth_images, Rng};
    let [n, c, h, w] = shape;
    let mut x = conv3x3_relu(&smooth_images(n, h, w, seed), n, h, w, c, seed + 1);
    let mut rng = Rng::new(seed + 2);
    let (ty, tx, planes) = (h.div_ceil(8), w.div_ceil(8), n * c);
    let mut pairs = Vec::new();
    for _ in 0..copies {
        let (pa, pb) = (rng.next_u32() as usize % planes, rng.next_u32() as usize % planes);
        let r = rng.next_u32() as usize % (ty * tx);
        if pa == pb {
            continue;
        }
        let (y0, x0) = ((r / tx) * 8, (r % tx) * 8);
        for y in y0..(y0 + 8).min(h) {
            for xx in x0..(x0 + 8).min(w) {
                let v = x[pa * h * w + y * w + xx];
                x[pb * h * w + y * w + xx] = if v > 0.0 { v * (1.0 + noise * rng.signed()) } else { v };
            }
        }
        pairs.push((pa * ty * tx + r, pb * ty * tx + r));
    }
    (x, pairs)
}

/// `n` seeded values uniform in [-1, 1).
pub fn rand(n: usize, seed: u64) -> Vec<f32> {
    let mut g = fdsr::data::synthetic::SplitMix64::new(seed);
    (0..n).map(|_| g.range(-1.0, 1.0)).collect()
}

/// `v` uploaded as a workspace tensor of `shape`.
pub fn up(ctx: &GpuContext, v: &[f32], shape: &[usize]) -> fdsr::engine::Tensor {
    fdsr::engine::Tensor::from_slice(ctx, v, shape, fdsr::gpu::Category::Workspace).unwrap()
}

/// The values of `t` (its work must be submitted).
pub fn read(ctx: &GpuContext, t: &fdsr::engine::Tensor) -> Vec<f32> {
    pollster::block_on(t.to_vec(ctx)).unwrap()
}

/// Asserts `got ≈ want` within `tol · (1 + |want|)` element by element.
pub fn close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: gpu {g} vs reference {w}");
    }
}
