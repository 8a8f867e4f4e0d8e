//! Codec speed benchmark (native): device-resident encode and decode (what training runs: no
//! readback) and the file path's compress and decompress (with their readbacks), each against a
//! plain copy kernel over the same tensor on the same device, measured in one run.

use super::activations::{conv3x3_relu, smooth_images};
use crate::codec::api::{compress_buffer, decompress};
use crate::codec::config::{CodecOptions, Policy};
use crate::codec::resident::fdsr::{record_tile_read, SegmentGeom};
use crate::codec::resident::{record_decode, record_encode};
use crate::error::Result;
use crate::gpu::kernel::{dispatch, storage_init, storage_zeroed, uniform};
use crate::gpu::{Category, GpuContext, Timings};
use std::time::Instant;

/// Median seconds per run of each measured operation.
#[derive(Clone, Debug)]
pub struct SpeedReport {
    /// Adapter description.
    pub adapter: String,
    /// Tensor shape.
    pub shape: Vec<usize>,
    /// Policy measured.
    pub policy: String,
    /// Copy kernel seconds.
    pub copy_s: f64,
    /// Device-resident encode seconds (every pass, recorded, submitted and waited for once).
    pub encode_s: f64,
    /// Device-resident decode seconds into a device buffer.
    pub decode_s: f64,
    /// File-path compress seconds (all passes and readbacks of the stored form).
    pub compress_s: f64,
    /// File-path decompress seconds (upload of the stored form, decode, readback of f32).
    pub decompress_s: f64,
    /// fp32 bytes over the device bytes reserved for the stored form.
    pub ratio: f64,
    /// fp32 bytes over the serialized bytes of the file path.
    pub file_ratio: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A ReLU activation of about `mib` MiB, `[n, 16, 64, 64]`.
pub fn activation(mib: usize) -> (Vec<usize>, Vec<f32>) {
    let n = (mib * (1 << 20) / 4 / (16 * 64 * 64)).max(1);
    let img = smooth_images(n, 64, 64, 7);
    (vec![n, 16, 64, 64], conv3x3_relu(&img, n, 64, 64, 16, 11))
}

/// Times copy, compress and decompress (`reps` runs each after one warm-up run).
pub async fn measure(
    ctx: &GpuContext,
    shape: &[usize],
    x: &[f32],
    policy: &Policy,
    reps: usize,
) -> Result<SpeedReport> {
    let input = storage_init(ctx, "bench input", bytemuck::cast_slice(x));
    let out = storage_zeroed(ctx, "bench copy", (x.len() * 4) as u64);
    let params = uniform(ctx, "copy", &[x.len() as u32, 0, 0, 0]);
    let opts = CodecOptions::default();
    let acc = storage_zeroed(ctx, "bench totals", 16);
    // Copy, encode and decode alternate, so that the three medians see the same machine.
    let (mut copy, mut enc_s, mut dec_s, mut ratio) = (Vec::new(), Vec::new(), Vec::new(), 0.0);
    for i in 0..=reps {
        let t = Instant::now();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        dispatch(ctx, &mut enc, "copy", "copy_words", &[&input, &out, &params], (x.len() as u32).div_ceil(256))?;
        ctx.submit(enc);
        ctx.wait_for_device()?;
        if i > 0 {
            copy.push(t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let r = record_encode(ctx, &mut enc, &input, shape, policy, &opts, Category::SavedActivations, &acc)?;
        ctx.submit(enc);
        ctx.wait_for_device()?;
        let te = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        record_decode(ctx, &mut enc, &r, &out)?;
        ctx.submit(enc);
        ctx.wait_for_device()?;
        if i > 0 {
            enc_s.push(te);
            dec_s.push(t.elapsed().as_secs_f64());
        }
        ratio = (x.len() * 4) as f64 / r.reserved_bytes() as f64;
    }
    let (mut comp, mut decomp, mut file_ratio) = (Vec::new(), Vec::new(), 0.0);
    for i in 0..=reps {
        let t = Instant::now();
        let c = compress_buffer(ctx, &input, shape, policy, &opts).await?;
        let tc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        decompress(ctx, &c).await?;
        let td = t.elapsed().as_secs_f64();
        if i > 0 {
            comp.push(tc);
            decomp.push(td);
        }
        file_ratio = c.ratio();
    }
    Ok(SpeedReport {
        adapter: ctx.adapter_description(),
        shape: shape.to_vec(),
        policy: policy.to_string(),
        copy_s: median(copy),
        encode_s: median(enc_s),
        decode_s: median(dec_s),
        compress_s: median(comp),
        decompress_s: median(decomp),
        ratio,
        file_ratio,
    })
}

/// Median seconds of the copy kernel and of one read of every 8×8 tile of `x` (4-D; the
/// yardstick of each of the `fdsr` encoder's two passes, which read the tensor the same way),
/// alternated over `reps` runs after a warm-up.
pub fn tile_read(ctx: &GpuContext, shape: &[usize], x: &[f32], reps: usize) -> Result<(f64, f64)> {
    let [n, c, h, w] = shape else {
        return Err(crate::error::FdsrError::InvalidTensor(format!("tile read of a {}-D tensor", shape.len())));
    };
    let g = SegmentGeom::new(0, (n * c) as u64, *h, *w);
    let input = storage_init(ctx, "bench input", bytemuck::cast_slice(x));
    let out = storage_zeroed(ctx, "bench copy", (x.len() * 4) as u64);
    let params = uniform(ctx, "copy", &[x.len() as u32, 0, 0, 0]);
    let (mut copy, mut tiles) = (Vec::new(), Vec::new());
    for i in 0..=reps {
        for tiled in [false, true] {
            let t = Instant::now();
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            if tiled {
                record_tile_read(ctx, &mut enc, &input, &g)?;
            } else {
                dispatch(
                    ctx,
                    &mut enc,
                    "copy",
                    "copy_words",
                    &[&input, &out, &params],
                    (x.len() as u32).div_ceil(256),
                )?;
            }
            ctx.submit(enc);
            ctx.wait_for_device()?;
            if i > 0 {
                if tiled { &mut tiles } else { &mut copy }.push(t.elapsed().as_secs_f64());
            }
        }
    }
    Ok((median(copy), median(tiles)))
}

/// GPU time per kernel entry point of one device-resident encode and decode of `x` (empty
/// without timestamp queries).
pub async fn kernel_times(ctx: &GpuContext, shape: &[usize], x: &[f32], policy: &Policy) -> Result<Timings> {
    let input = storage_init(ctx, "bench input", bytemuck::cast_slice(x));
    let (out, acc) = (storage_zeroed(ctx, "bench output", (x.len() * 4) as u64), storage_zeroed(ctx, "totals", 16));
    if !ctx.profiler.enable(&ctx.device) {
        return Ok(Timings::default());
    }
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let r = record_encode(ctx, &mut enc, &input, shape, policy, &CodecOptions::default(), Category::Workspace, &acc)?;
    record_decode(ctx, &mut enc, &r, &out)?;
    ctx.submit(enc);
    ctx.profiler.collect(ctx).await
}
