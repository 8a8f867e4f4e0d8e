//! The GPU baselines (`uniform:B`, `division`, `lossless`) against the pure-Rust reference,
//! through the file path (device-resident kernels plus readback): the bodies must be equal bit
//! for bit, the decoded tensors equal within 1e-6 relative, and segmented runs (a small binding
//! limit) must give the same bodies as unsegmented ones.

mod common;

use fdsr::codec::api::{compress_buffer, decompress};
use fdsr::codec::format::{DivisionBody, UniformBody};
use fdsr::codec::resident::layout::segments;
use fdsr::gpu::kernel::storage_init;
use fdsr::gpu::ContextOptions;
use fdsr::reference::{division, quant::hash, uniform};
use fdsr::{Body, CodecOptions, Compressed, FdsrError, GpuContext, Policy, Result, Rounding};
use pollster::block_on;

/// The four GPU entry points of the baselines, as the old per-policy drivers had them.
mod gpu {
    use super::*;

    async fn body(ctx: &GpuContext, x: &wgpu::Buffer, shape: &[usize], p: Policy, o: &CodecOptions) -> Result<Body> {
        Ok(compress_buffer(ctx, x, shape, &p, o).await?.body)
    }

    fn wrap(shape: &[usize], body: Body) -> Compressed {
        Compressed { shape: shape.to_vec(), seed: 0, tensor_id: 0, rounding: Rounding::Stochastic, body }
    }

    pub async fn uniform(
        ctx: &GpuContext,
        x: &wgpu::Buffer,
        shape: &[usize],
        bits: u8,
        o: &CodecOptions,
    ) -> Result<UniformBody> {
        match body(ctx, x, shape, Policy::Uniform { bits }, o).await? {
            Body::Uniform(u) => Ok(u),
            other => panic!("uniform gave {other:?}"),
        }
    }

    pub async fn division(
        ctx: &GpuContext,
        x: &wgpu::Buffer,
        shape: &[usize],
        o: &CodecOptions,
    ) -> Result<DivisionBody> {
        match body(ctx, x, shape, Policy::Division, o).await? {
            Body::Division(d) => Ok(d),
            other => panic!("division gave {other:?}"),
        }
    }

    pub async fn lossless(ctx: &GpuContext, x: &wgpu::Buffer, n: usize) -> Result<Vec<u32>> {
        match body(ctx, x, &[n], Policy::Lossless, &CodecOptions::default()).await? {
            Body::Lossless { data } => Ok(data),
            other => panic!("lossless gave {other:?}"),
        }
    }

    pub async fn uniform_decode(ctx: &GpuContext, u: &UniformBody, shape: &[usize]) -> Result<Vec<f32>> {
        decompress(ctx, &wrap(shape, Body::Uniform(u.clone()))).await
    }

    pub async fn division_decode(ctx: &GpuContext, d: &DivisionBody, shape: &[usize]) -> Result<Vec<f32>> {
        decompress(ctx, &wrap(shape, Body::Division(d.clone()))).await
    }

    pub async fn lossless_decode(ctx: &GpuContext, data: &[u32], n: usize) -> Result<Vec<f32>> {
        decompress(ctx, &wrap(&[n], Body::Lossless { data: data.to_vec() })).await
    }
}

/// Deterministic uniform value in [-1, 1) for `(salt, i)`.
fn noise(salt: u32, i: usize) -> f32 {
    (hash(hash(salt) ^ i as u32) >> 8) as f32 / (1 << 23) as f32 - 1.0
}

/// Test tensors of `numel` values laid out as `shape` (last two dims are rows and columns):
/// smooth, ReLU-like (many exact zeros) and random over several magnitudes.
fn inputs(shape: &[usize]) -> Vec<(&'static str, Vec<f32>)> {
    let numel: usize = shape.iter().product();
    let w = *shape.last().unwrap_or(&1);
    let h = if shape.len() >= 2 { shape[shape.len() - 2] } else { 1 };
    let coord = |i: usize| ((i / w) % h, i % w, i / (w * h));
    let smooth: Vec<f32> = (0..numel)
        .map(|i| {
            let (y, x, p) = coord(i);
            3.0 * (0.21 * x as f32 + 0.4 * p as f32).sin() * (0.13 * y as f32).cos() + 0.5
        })
        .collect();
    let relu: Vec<f32> = smooth.iter().enumerate().map(|(i, &s)| (s - 1.0 + 0.7 * noise(1, i)).max(0.0)).collect();
    let random: Vec<f32> = (0..numel).map(|i| noise(2, i) * [1e-3, 1.0, 250.0][(i / 300) % 3]).collect();
    vec![("smooth", smooth), ("relu", relu), ("random", random)]
}

fn opts(rounding: Rounding) -> CodecOptions {
    CodecOptions { seed: 0x5eed_1234, tensor_id: 7, rounding }
}

/// `got` equals `want` within 1e-6 relative (of the value, or of the tensor's magnitude near 0).
fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0f32, |a, v| a.max(v.abs()));
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= 1e-6 * b.abs().max(scale * 1e-3), "{what}: value {i}: gpu {a} vs reference {b}");
    }
}

fn upload(ctx: &GpuContext, x: &[f32]) -> wgpu::Buffer {
    storage_init(ctx, "test input", bytemuck::cast_slice(x))
}

fn check_uniform(ctx: &GpuContext, shape: &[usize], bits: u8, rounding: Rounding, name: &str, x: &[f32]) {
    let what = format!("uniform:{bits} {rounding:?} {name} {shape:?}");
    let o = opts(rounding);
    let body = block_on(gpu::uniform(ctx, &upload(ctx, x), shape, bits, &o)).expect(&what);
    let want = uniform::encode(x, bits, &o);
    assert_eq!(body, want, "{what}: body differs from the reference");
    let got = block_on(gpu::uniform_decode(ctx, &body, shape)).expect(&what);
    assert_close(&got, &uniform::decode(&want, x.len()).expect(&what), &what);
}

fn check_division(ctx: &GpuContext, shape: &[usize], rounding: Rounding, name: &str, x: &[f32]) {
    let what = format!("division {rounding:?} {name} {shape:?}");
    let o = opts(rounding);
    let body = block_on(gpu::division(ctx, &upload(ctx, x), shape, &o)).expect(&what);
    let want = division::encode(x, shape, &o).expect(&what);
    assert_eq!(body, want, "{what}: body differs from the reference");
    let got = block_on(gpu::division_decode(ctx, &body, shape)).expect(&what);
    assert_close(&got, &division::decode(&want, shape).expect(&what), &what);
}

#[test]
fn uniform_bodies_equal_the_reference() {
    let Some(ctx) = common::gpu() else { return };
    let shapes: [&[usize]; 7] = [&[1], &[255], &[257], &[1000], &[3, 333], &[2, 7, 129], &[2, 3, 13, 19]];
    for shape in shapes {
        for (name, x) in inputs(shape) {
            for bits in 1..=8 {
                for rounding in [Rounding::Stochastic, Rounding::Nearest] {
                    check_uniform(&ctx, shape, bits, rounding, name, &x);
                }
            }
        }
    }
}

#[test]
fn division_bodies_equal_the_reference() {
    let Some(ctx) = common::gpu() else { return };
    let shapes: [&[usize]; 6] =
        [&[1, 1, 1, 1], &[1, 2, 8, 8], &[2, 3, 13, 19], &[2, 1, 17, 33], &[1, 3, 64, 40], &[3, 5, 1, 70]];
    for shape in shapes {
        for (name, x) in inputs(shape) {
            for rounding in [Rounding::Stochastic, Rounding::Nearest] {
                check_division(&ctx, shape, rounding, name, &x);
            }
        }
    }
}

#[test]
fn constant_and_zero_tensors_round_trip() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [1, 2, 9, 10];
    for v in [0.0f32, 1.0, -3.25, 0.1] {
        let x = vec![v; 180];
        check_division(&ctx, &shape, Rounding::Stochastic, "constant", &x);
        for bits in [1, 3, 8] {
            check_uniform(&ctx, &shape, bits, Rounding::Stochastic, "constant", &x);
        }
    }
}

#[test]
fn chunked_runs_give_the_unchunked_bodies() {
    let Some(ctx) = common::gpu() else { return };
    let Some(small) = common::gpu_with(ContextOptions { max_binding_bytes: Some(4096), ..Default::default() }) else {
        return;
    };
    assert_eq!(small.max_binding_bytes(), 4096);
    let o = opts(Rounding::Stochastic);
    // Uniform: 4 groups per chunk, a partial last group.
    let shape = [5, 1111];
    let (_, x) = &inputs(&shape)[2];
    let segs = segments(5555u64.div_ceil(256), 1024, small.max_binding_bytes()).expect("segments");
    assert!(segs.len() > 1, "not segmented: {segs:?}");
    for bits in [1, 3, 5, 8] {
        let whole = block_on(gpu::uniform(&ctx, &upload(&ctx, x), &shape, bits, &o)).expect("whole");
        let chunked = block_on(gpu::uniform(&small, &upload(&small, x), &shape, bits, &o)).expect("chunked");
        assert_eq!(chunked, whole, "uniform:{bits}");
        assert_eq!(whole, uniform::encode(x, bits, &o), "uniform:{bits}");
        let a = block_on(gpu::uniform_decode(&ctx, &whole, &shape)).expect("decode");
        let b = block_on(gpu::uniform_decode(&small, &whole, &shape)).expect("chunked decode");
        assert_eq!(a, b, "uniform:{bits} decode");
    }
    // Division: segment boundaries in the middle of payload words.
    for shape in [[2, 3, 13, 19], [3, 4, 9, 11]] {
        let segs = segments((shape[0] * shape[1]) as u64, (shape[2] * shape[3] * 4) as u64, small.max_binding_bytes());
        assert!(segs.expect("segments").len() > 1, "not segmented");
        for (name, x) in inputs(&shape) {
            let whole = block_on(gpu::division(&ctx, &upload(&ctx, &x), &shape, &o)).expect("whole");
            let chunked = block_on(gpu::division(&small, &upload(&small, &x), &shape, &o)).expect("chunked");
            assert_eq!(chunked, whole, "division {name} {shape:?}");
            assert_eq!(whole, division::encode(&x, &shape, &o).expect("reference"), "division {name} {shape:?}");
            let a = block_on(gpu::division_decode(&ctx, &whole, &shape)).expect("decode");
            let b = block_on(gpu::division_decode(&small, &whole, &shape)).expect("chunked decode");
            assert_eq!(a, b, "division {name} {shape:?} decode");
        }
    }
    // Lossless reads back in pieces of one binding.
    let (_, x) = &inputs(&[3000])[1];
    let data = block_on(gpu::lossless(&small, &upload(&small, x), x.len())).expect("lossless");
    assert_eq!(data, x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}

#[test]
fn lossless_is_verbatim() {
    let Some(ctx) = common::gpu() else { return };
    let x: Vec<f32> = (0..777).map(|i| noise(9, i) * 1e30).chain([0.0, -0.0, f32::MIN_POSITIVE, 1e-45]).collect();
    let data = block_on(gpu::lossless(&ctx, &upload(&ctx, &x), x.len())).expect("compress");
    assert_eq!(data, x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let y = block_on(gpu::lossless_decode(&ctx, &data, x.len())).expect("decompress");
    assert_eq!(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), data);
    let buf = storage_init(&ctx, "lossless values", bytemuck::cast_slice(&data));
    assert_eq!(block_on(gpu::lossless(&ctx, &buf, x.len())).expect("re-read"), data);
    assert!(matches!(block_on(gpu::lossless_decode(&ctx, &data, 5)), Err(FdsrError::Corrupt(_))));
    let bad = [f32::NAN.to_bits()];
    assert!(matches!(block_on(gpu::lossless(&ctx, &upload(&ctx, &[f32::NAN]), 1)), Err(FdsrError::InvalidTensor(_))));
    assert!(matches!(block_on(gpu::lossless_decode(&ctx, &bad, 1)), Err(FdsrError::Corrupt(_))));
}

#[test]
fn bad_inputs_and_bodies_are_errors() {
    let Some(ctx) = common::gpu() else { return };
    let o = opts(Rounding::Stochastic);
    let shape = [1, 1, 5, 60];
    let (_, x) = &inputs(&shape)[0];
    for bad in [f32::INFINITY, f32::NAN, 1.5e36, -2e37] {
        let mut y = x.clone();
        y[123] = bad;
        let u = block_on(gpu::uniform(&ctx, &upload(&ctx, &y), &shape, 4, &o));
        assert!(matches!(u, Err(FdsrError::InvalidTensor(_))), "uniform accepted {bad}: {u:?}");
        let d = block_on(gpu::division(&ctx, &upload(&ctx, &y), &shape, &o));
        assert!(matches!(d, Err(FdsrError::InvalidTensor(_))), "division accepted {bad}: {d:?}");
    }
    let input = upload(&ctx, x);
    for bits in [0, 9] {
        assert!(block_on(gpu::uniform(&ctx, &input, &shape, bits, &o)).is_err(), "bits {bits}");
    }
    assert!(block_on(gpu::uniform(&ctx, &input, &[301], 4, &o)).is_err(), "buffer too small");
    assert!(block_on(gpu::uniform(&ctx, &input, &[0, 3], 4, &o)).is_err(), "zero dimension");
    assert!(block_on(gpu::division(&ctx, &input, &[300], &o)).is_err(), "division needs rank 4");
    let u = block_on(gpu::uniform(&ctx, &input, &shape, 3, &o)).expect("uniform");
    let mut short = u.clone();
    short.payload.pop();
    assert!(matches!(block_on(gpu::uniform_decode(&ctx, &short, &shape)), Err(FdsrError::Corrupt(_))));
    assert!(matches!(block_on(gpu::uniform_decode(&ctx, &u, &[600])), Err(FdsrError::Corrupt(_))));
    let mut nan_min = u.clone();
    nan_min.mins[0] = 0x7fc0;
    assert!(matches!(block_on(gpu::uniform_decode(&ctx, &nan_min, &shape)), Err(FdsrError::Corrupt(_))));
    let d = block_on(gpu::division(&ctx, &input, &shape, &o)).expect("division");
    let mut short = d.clone();
    short.means.pop();
    assert!(matches!(block_on(gpu::division_decode(&ctx, &short, &shape)), Err(FdsrError::Corrupt(_))));
    assert!(matches!(block_on(gpu::division_decode(&ctx, &d, &[1, 5, 60])), Err(FdsrError::Corrupt(_))));
}
