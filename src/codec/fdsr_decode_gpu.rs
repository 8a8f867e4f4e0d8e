//! GPU decoder of the `fdsr` 4-D path (`shaders/fdsr_decode.wgsl`), chunk by chunk of planes. A
//! reference tile decodes its representative's payload at its own position (exact also when the
//! representative is an edge tile whose pad the output crops); references that cross this
//! device's chunks (possible only for bytes encoded with a larger binding) go to the host decoder.

use super::alloc;
use super::bits::{extract_bits, unpack2};
use super::fdsr_gpu::{DecodeParams, Geometry};
use super::format::FdsrBody;
use super::scan::{record_class_sizes, record_scan, Keep};
use super::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::{dispatch, storage_init, storage_zeroed, submit, uniform};
use crate::gpu::GpuContext;

const WG: u32 = 64;

/// Per tile, itself or (for a reference) the non-reference tile its chain of references ends at.
fn resolve_sources(body: &FdsrBody, classes: &[u32]) -> Vec<u32> {
    let mut src: Vec<u32> = (0..classes.len() as u32).collect();
    let mut next = body.refs.iter();
    for t in 0..classes.len() {
        if classes[t] == 3 {
            // validate_body checked that each reference points to an earlier tile.
            let s = next.next().map_or(t, |&s| s as usize);
            src[t] = src[s.min(t)];
        }
    }
    src
}

/// Decompresses an `fdsr` body of a rank-4 `shape` into a new f32 buffer on the device.
pub async fn decompress(ctx: &GpuContext, body: &FdsrBody, shape: &[usize]) -> Result<Vec<f32>> {
    let g = Geometry::new(ctx, shape)?;
    let tiles_total = g.planes * g.tiles_per_plane;
    crate::reference::fdsr::validate_body(body, g.planes, tiles_total)?;
    let class_bits = alloc::class_bits(&body.band_edges, &body.bits);
    let classes = unpack2(&body.classes, tiles_total);
    let sources = resolve_sources(body, &classes);
    let cross = g.chunks().any(|(first, count)| {
        let (t0, t1) = (first * g.tiles_per_plane, (first + count) * g.tiles_per_plane);
        sources[t0..t1].iter().any(|&s| (s as usize) < t0)
    });
    if cross {
        // References across this device's chunks (encoded with a larger binding): exact on the host.
        return crate::reference::fdsr::decode(body, shape);
    }
    let tables = Tables::buffer(ctx);
    let mut out = Vec::with_capacity(g.planes * g.h * g.w);
    let mut bit_pos = 0u64;
    for (first, count) in g.chunks() {
        let ep = g.params(first, count, &body.band_edges, &body.bits);
        let params = DecodeParams {
            planes: ep.planes,
            h: ep.h,
            w: ep.w,
            tiles_x: ep.tiles_x,
            tiles_per_plane: ep.tiles_per_plane,
            tiles: ep.tiles,
            nbands: ep.nbands,
            e0: body.e0,
            edges: ep.edges,
            bits: ep.bits,
        };
        let t0 = first * g.tiles_per_plane;
        let cls = &classes[t0..t0 + ep.tiles as usize];
        let nbits: u64 = cls.iter().map(|&c| u64::from(class_bits[c as usize])).sum();
        let words = extract_bits(&body.payload, bit_pos, nbits);
        bit_pos += nbits;
        let dc: Vec<u32> = body.dc_codes[first..first + count].iter().map(|&c| c.into()).collect();
        let pbuf = uniform(ctx, "fdsr decode", &params);
        let cbuf = storage_init(ctx, "fdsr classes", bytemuck::cast_slice(cls));
        let dbuf = storage_init(ctx, "fdsr dc codes", bytemuck::cast_slice(&dc));
        let offsets = storage_init(ctx, "fdsr offsets", bytemuck::cast_slice(cls));
        let pay = storage_init(ctx, "fdsr payload", bytemuck::cast_slice(&words));
        let local: Vec<u32> = sources[t0..t0 + ep.tiles as usize].iter().map(|&s| s - t0 as u32).collect();
        let sbuf = storage_init(ctx, "fdsr sources", bytemuck::cast_slice(&local));
        let n = count * g.h * g.w;
        let output = storage_zeroed(ctx, "fdsr output", n as u64 * 4);
        let mut keep: Keep = Vec::new();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        record_class_sizes(ctx, &mut enc, &offsets, ep.tiles, class_bits, &mut keep)?;
        record_scan(ctx, &mut enc, &offsets, ep.tiles, &mut keep)?;
        let binds = [&tables, &pbuf, &cbuf, &dbuf, &offsets, &pay, &output, &sbuf];
        dispatch(ctx, &mut enc, "fdsr_decode", "unpack_tiles", &binds, ep.tiles.div_ceil(WG))?;
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fdsr output readback"),
            size: (n as u64 * 4).max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        enc.copy_buffer_to_buffer(&output, 0, &staging, 0, n as u64 * 4);
        submit(ctx, "fdsr decode", enc).await?;
        read_f32_into(ctx, &staging, n, &mut out).await?;
    }
    Ok(out)
}

/// Appends the first `n` f32 of the mappable `staging` buffer to `out` (one host copy).
async fn read_f32_into(ctx: &GpuContext, staging: &wgpu::Buffer, n: usize, out: &mut Vec<f32>) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let (tx, rx) = futures_channel::oneshot::channel();
    staging.slice(..n as u64 * 4).map_async(wgpu::MapMode::Read, move |r| {
        // The receiver only disappears if the caller dropped the future; nothing to report then.
        let _ = tx.send(r);
    });
    ctx.wait_for_device()?;
    rx.await
        .map_err(|_| FdsrError::Readback("map callback dropped".into()))?
        .map_err(|e| FdsrError::Readback(e.to_string()))?;
    {
        let view = staging.slice(..n as u64 * 4).get_mapped_range().map_err(|e| FdsrError::Readback(e.to_string()))?;
        out.extend_from_slice(bytemuck::cast_slice(&view));
    }
    staging.unmap();
    Ok(())
}
