//! The `.fdsr` file path of the block-DCT policy: every segment's analysis on the device, read
//! back and summed once on the host, which chooses the tensor's bits (as the reference does) and
//! writes them with e0 into every segment's header; the device-resident pack; and the readback
//! turned into the serialized body (references split out of the tile bitstream). Decoding builds
//! the device regions from the body and runs the device decoder.

use super::{pack_words, unpack_words, upload, workspace};
use crate::codec::alloc::{self, FdsrStats};
use crate::codec::bits::unpack2;
use crate::codec::config::{BitChoice, CodecOptions, FdsrConfig};
use crate::codec::format::FdsrBody;
use crate::codec::resident::fdsr::{pack_args, record_decode, Job, PackLaunch, SegmentGeom, STATS};
use crate::codec::resident::layout::{self, segments, FdsrLayout, HEADER_WORDS, REFERENCE_BITS, STAT_WORDS};
use crate::codec::resident::slice;
use crate::codec::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::kernel::submit;
use crate::gpu::{read_words, GpuContext};
use crate::reference::alloc_rule::class_bits;
use crate::reference::pack::{BitReader, BitWriter};
use crate::reference::quant;
use crate::reference::reuse::ReuseStats;

/// The segments of a rank-4 `shape` on this device.
fn segment_geoms(ctx: &GpuContext, shape: &[usize]) -> Result<Vec<SegmentGeom>> {
    let [n, c, h, w] = *shape else {
        return Err(FdsrError::InvalidTensor(format!("the DCT path needs rank 4, got shape {shape:?}")));
    };
    let planes = (n * c) as u64;
    Ok(segments(planes, (h * w * 4) as u64, ctx.max_binding_bytes())?
        .into_iter()
        .map(|(p0, count)| SegmentGeom::new(p0, count, h, w))
        .collect())
}

/// A region's header for `bits` (file path: host-chosen bits and e0).
fn header(edges: &[u8], bits: &[u8], e0: i32) -> Vec<u32> {
    let mut h = vec![0u32; HEADER_WORDS as usize];
    bits.iter().enumerate().for_each(|(i, &b)| h[i] = b.into());
    let cb = class_bits(edges, bits);
    h[layout::H_E0] = e0 as u32;
    h[layout::H_CLASS_BITS..layout::H_CLASS_BITS + 4].copy_from_slice(&[0, cb[1], cb[2], REFERENCE_BITS]);
    h[layout::H_NBANDS] = bits.len() as u32;
    h
}

/// Copies `n` bits from `r` to `w`.
fn copy_bits(r: &mut BitReader<'_>, w: &mut BitWriter, n: u32) -> Result<()> {
    let mut left = n;
    while left > 0 {
        let k = left.min(32);
        w.write(r.read(k)?, k);
        left -= k;
    }
    Ok(())
}

/// What [`encode`] returns: the body, reuse counts, the analysis and (when asked) reuse keys.
type Encoded = (FdsrBody, Option<ReuseStats>, FdsrStats, Vec<u32>);

async fn encode(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
    want_keys: bool,
) -> Result<Encoded> {
    cfg.validate()?;
    let tables = Tables::buffer(ctx);
    let segs = segment_geoms(ctx, shape)?;
    let total = shape.iter().product::<usize>() as u64 * 4;
    let nb = cfg.band_edges.len() - 1;
    let job = |g: SegmentGeom, layout| Job { ctx, tables: &tables, g, layout, cfg, opts };
    let offsets_of = |g: &SegmentGeom| FdsrLayout::for_fixed(g.planes.into(), g.tiles().into(), 0);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let mut kept = Vec::new();
    for g in &segs {
        let x = slice(ctx, &mut enc, input, g.first_plane * u64::from(g.h * g.w) * 4, g.numel() * 4, total);
        let a = job(*g, offsets_of(g)).analyze(&mut enc, &x)?;
        kept.push((x, a));
    }
    submit(ctx, "fdsr analyze", enc).await?;
    let mut st = FdsrStats::new(&cfg.band_edges);
    st.set_weights(cfg.weights());
    let (mut dcmax, mut nonzero, mut full) = (Vec::new(), Vec::new(), Vec::new());
    for (g, (_, a)) in segs.iter().zip(&kept) {
        let part = read_words(ctx, &a.partials, g.groups() as usize * STATS as usize).await?;
        let mut seg_full = 0u64;
        for p in part.chunks(STATS as usize).map(|c| c.iter().map(|&w| f32::from_bits(w)).collect::<Vec<_>>()) {
            for b in 1..nb {
                st.band_sum_n_max2[b] += f64::from(p[b]);
                st.band_energy[b] += f64::from(p[8 + b]);
            }
            st.zero_tiles += p[16] as u64;
            st.dc_tiles += p[17] as u64;
            seg_full += p[18] as u64;
            st.gmax = st.gmax.max(p[19]);
        }
        st.full_tiles += seg_full;
        full.push(seg_full);
        let dc = read_words(ctx, &a.dcmax, 2 * g.planes as usize).await?;
        dcmax.extend(dc[..g.planes as usize].iter().map(|&b| f32::from_bits(b)));
        nonzero.extend(dc[g.planes as usize..].iter().map(|&n| u64::from(n)));
    }
    (st.planes, st.numel) = (dcmax.len() as u64, shape.iter().product::<usize>() as u64);
    st.set_dc(&dcmax, &nonzero);
    let bits = match &cfg.bits {
        BitChoice::Fixed(b) => b.clone(),
        BitChoice::Budget(budget) => alloc::choose_bits(&st, *budget)?,
    };
    let e0 = quant::e0_for(st.gmax);
    let cb = class_bits(&cfg.band_edges, &bits);
    let head = header(&cfg.band_edges, &bits, e0);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let mut packed = Vec::new();
    for (g, (x, a)) in segs.iter().zip(&kept) {
        let l = FdsrLayout::for_fixed(g.planes.into(), g.tiles().into(), cb[2]);
        let region = upload(ctx, l.words, &head);
        ctx.write_buffer(&a.pack_args, 0, bytemuck::cast_slice(&pack_args(g, PackLaunch::for_bits(&bits))));
        let (stats, acc) = (workspace(ctx, STAT_WORDS), workspace(ctx, 4));
        enc.clear_buffer(&stats, 0, None);
        let reuse = job(*g, l).pack(&mut enc, x, a, &region, (&stats, &acc), false)?;
        packed.push((l, region, stats, reuse));
    }
    submit(ctx, "fdsr pack", enc).await?;
    let mut body = FdsrBody {
        band_edges: cfg.band_edges.clone(),
        bits,
        e0,
        classes: Vec::new(),
        dc_codes: Vec::new(),
        refs: Vec::new(),
        payload: Vec::new(),
    };
    let (mut classes, mut payload, mut keys) = (Vec::new(), BitWriter::new(), Vec::new());
    let mut reuse = cfg.reuse.map(|_| ReuseStats::default());
    for ((g, (l, region, stats, rb)), seg_full) in segs.iter().zip(&packed).zip(&full) {
        let w = read_words(ctx, region, l.words as usize).await?;
        body.dc_codes.extend(unpack_words(&w[l.dc_off as usize..], g.planes as usize, 4).into_iter().map(|c| c as u8));
        let cls = unpack_words(&w[l.cls_off as usize..], g.tiles() as usize, 16);
        let mut r = BitReader::new(&w[l.pay_off as usize..]);
        let tile_base = g.first_plane as u32 * g.tiles_per_plane;
        for &c in &cls {
            match c {
                1 | 2 => copy_bits(&mut r, &mut payload, cb[c as usize])?,
                3 => body.refs.push(r.read(REFERENCE_BITS)? + tile_base),
                _ => {}
            }
        }
        if let Some(rs) = reuse.as_mut() {
            let s = read_words(ctx, stats, STAT_WORDS as usize).await?;
            let hits = cls.iter().filter(|&&c| c == 3).count() as u64;
            let candidates = u64::from(s[layout::STAT_CANDIDATES]);
            rs.add(&ReuseStats { hits, candidates, rejected: candidates.saturating_sub(hits), eligible: *seg_full });
        }
        if let (true, Some(rb)) = (want_keys, rb) {
            keys.extend(rb.keys(ctx).await?);
        }
        classes.extend(cls);
    }
    body.classes = crate::codec::bits::pack2(&classes);
    body.payload = payload.finish();
    Ok((body, reuse, st, keys))
}

/// Compresses the rank-4 tensor in `input` (f32, `STORAGE | COPY_SRC`) with the DCT path;
/// returns the body, the reuse counts (with reuse on) and the analysis statistics.
pub(super) async fn compress(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<(FdsrBody, Option<ReuseStats>, FdsrStats)> {
    let (body, reuse, st, _) = encode(ctx, input, shape, cfg, opts, false).await?;
    Ok((body, reuse, st))
}

/// The reuse key of every tile (0 for tiles that are not full), as the GPU computes it: for
/// comparing signatures with [`crate::reference::reuse::tile_key`]. Needs `cfg.reuse`.
pub async fn reuse_keys(
    ctx: &GpuContext,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
) -> Result<Vec<u32>> {
    Ok(encode(ctx, input, shape, cfg, opts, true).await?.3)
}

/// The region's block offsets of a segment's tiles of `classes` (full tiles `cb[2]` bits, DC-only
/// `cb[1]`, references [`REFERENCE_BITS`]): the bits of the tiles before each block.
fn block_offsets(classes: &[u32], cb: &[u32]) -> Vec<u32> {
    let size = |c: u32| match c {
        1 | 2 => cb[c as usize],
        3 => REFERENCE_BITS,
        _ => 0,
    };
    let mut at = 0u32;
    classes
        .chunks(layout::BLOCK_TILES as usize)
        .map(|b| {
            let first = at;
            at += b.iter().map(|&c| size(c)).sum::<u32>();
            first
        })
        .collect()
}

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

/// Decompresses an `fdsr` body of a rank-4 `shape` on the device; references that cross this
/// device's segments (possible only for bytes encoded with a larger binding) go to the host
/// decoder, which is exact.
pub(super) async fn decompress(ctx: &GpuContext, body: &FdsrBody, shape: &[usize]) -> Result<Vec<f32>> {
    let segs = segment_geoms(ctx, shape)?;
    let tiles: usize = segs.iter().map(|g| g.tiles() as usize).sum();
    let planes: usize = segs.iter().map(|g| g.planes as usize).sum();
    crate::reference::fdsr::validate_body(body, planes, tiles)?;
    let classes = unpack2(&body.classes, tiles);
    let sources = resolve_sources(body, &classes);
    let crosses = segs.iter().any(|g| {
        let t0 = (g.first_plane * u64::from(g.tiles_per_plane)) as usize;
        sources[t0..t0 + g.tiles() as usize].iter().any(|&s| (s as usize) < t0)
    });
    if crosses {
        return crate::reference::fdsr::decode(body, shape);
    }
    let cb = class_bits(&body.band_edges, &body.bits);
    let head = header(&body.band_edges, &body.bits, body.e0);
    let tables = Tables::buffer(ctx);
    let mut r = BitReader::new(&body.payload);
    let mut out = Vec::with_capacity(shape.iter().product());
    for g in &segs {
        let l = FdsrLayout::for_fixed(g.planes.into(), g.tiles().into(), cb[2]);
        let (p0, t0) = (g.first_plane as usize, (g.first_plane * u64::from(g.tiles_per_plane)) as usize);
        let mut words = head.clone();
        words.extend(pack_words(body.dc_codes[p0..p0 + g.planes as usize].iter().map(|&c| u32::from(c)), 4));
        let seg_classes = &classes[t0..t0 + g.tiles() as usize];
        words.extend(pack_words(seg_classes.iter().copied(), 16));
        words.extend(block_offsets(seg_classes, &cb));
        let mut w = BitWriter::new();
        for t in t0..t0 + g.tiles() as usize {
            match classes[t] {
                c @ (1 | 2) => copy_bits(&mut r, &mut w, cb[c as usize])?,
                3 => w.write(sources[t] - t0 as u32, REFERENCE_BITS),
                _ => {}
            }
        }
        words.extend(w.finish());
        let region = upload(ctx, l.words.max(words.len() as u64), &words);
        let dst = workspace(ctx, g.numel());
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        record_decode(ctx, &mut enc, &tables, g, &l, &body.band_edges, &region, &dst)?;
        submit(ctx, "fdsr decode", enc).await?;
        out.extend(read_words(ctx, &dst, g.numel() as usize).await?.into_iter().map(f32::from_bits));
    }
    Ok(out)
}
