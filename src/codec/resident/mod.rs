//! Device-resident stored forms: a tensor's compressed form as regions of pooled device buffers,
//! written by the encode kernels straight from the activation buffer and decoded straight into
//! another device buffer. Recording an encode or a decode never waits for the device and reads
//! nothing back: the training store uses these directly, the `.fdsr` file path
//! ([`crate::codec::file`]) adds the readback.
//!
//! A tensor is cut into segments (whole planes of 4-D tensors, whole groups of flat ones) of at
//! most one storage binding; each has its own region (header, metadata, payload; see
//! [`layout`]). Under a budget an `fdsr` segment's region holds exactly `budget × values` bits
//! plus the header, and the allocation kernel never chooses bits that overflow it.

pub mod fdsr;
pub mod flat;
pub mod layout;
mod params;
mod segment;

use std::sync::Arc;

use self::layout::{segments, DivisionLayout, FdsrLayout, UniformLayout, HEADER_WORDS};
use super::tables::Tables;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext, PooledBuffer, STORAGE_USAGE};
use crate::rules::alloc;
use crate::rules::config::{BitChoice, CodecOptions, FdsrConfig, Policy, GROUP_SIZE};

/// What one segment's region holds.
pub enum SegmentForm {
    /// f32 words verbatim after the header.
    Lossless,
    /// `uniform:B` (also `fdsr` on rank < 4).
    Uniform(UniformLayout),
    /// `division` over planes of `h × w`.
    Division {
        /// Region layout.
        layout: DivisionLayout,
        /// Plane height and width.
        hw: (usize, usize),
    },
    /// Block DCT, with the allocation's statistics (read with the metrics).
    Fdsr {
        /// Tiling.
        geom: fdsr::SegmentGeom,
        /// Region layout.
        layout: FdsrLayout,
        /// [`layout::STAT_WORDS`] words of statistics (shared with the store's records, which
        /// outlive the stored form).
        stats: Arc<PooledBuffer>,
    },
}

/// One segment: values `[first_value, first_value + values)` of the tensor.
pub struct Segment {
    /// Flat index of its first value.
    pub first_value: u64,
    /// Its values.
    pub values: u64,
    /// Its region.
    pub region: PooledBuffer,
    /// Its form.
    pub form: SegmentForm,
}

/// A tensor's stored form on the device.
pub struct Resident {
    /// Original shape.
    pub shape: Vec<usize>,
    /// The policy it was stored with (`fdsr` on rank < 4 is stored as `uniform`).
    pub policy: Policy,
    /// Seed, tensor id and rounding.
    pub opts: CodecOptions,
    /// Its segments, in order.
    pub segments: Vec<Segment>,
}

impl Resident {
    /// Values of the tensor.
    pub fn numel(&self) -> u64 {
        self.shape.iter().product::<usize>() as u64
    }

    /// Bytes of device memory reserved for the stored form (every region, headers included).
    pub fn reserved_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.region.size()).sum()
    }

    /// Bytes written, where the host knows them without reading back (every form but `fdsr`'s,
    /// whose size the device reports with the metrics).
    pub fn host_used_bytes(&self) -> Option<u64> {
        self.segments
            .iter()
            .map(|s| match &s.form {
                SegmentForm::Lossless => Some(4 * (HEADER_WORDS + s.values)),
                SegmentForm::Uniform(l) => Some(4 * l.words),
                SegmentForm::Division { layout, .. } => Some(4 * layout.words),
                SegmentForm::Fdsr { .. } => None,
            })
            .sum()
    }
}

/// `uniform:B` bits of the `fdsr` flat path (rank < 4) for `numel` values.
fn flat_bits(cfg: &FdsrConfig, numel: usize) -> Result<u8> {
    match &cfg.bits {
        BitChoice::Budget(b) => alloc::flat_bits_for_budget(numel, *b),
        BitChoice::Fixed(b) => Ok(alloc::flat_bits_for_fixed(b)),
    }
}

fn region(ctx: &GpuContext, category: Category, words: u64) -> PooledBuffer {
    ctx.pool.get(&ctx.device, category, words * 4, STORAGE_USAGE)
}

/// `input`'s bytes `[offset, offset + bytes)`: the buffer itself when that is the whole tensor of
/// `total` bytes, else a recorded copy into a workspace buffer.
pub(crate) fn slice(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    input: &wgpu::Buffer,
    offset: u64,
    bytes: u64,
    total: u64,
) -> SliceOf {
    if offset == 0 && bytes == total {
        return SliceOf::Whole(input.clone());
    }
    let buf = ctx.pool.get(&ctx.device, Category::Workspace, bytes, STORAGE_USAGE);
    enc.copy_buffer_to_buffer(input, offset, &buf, 0, bytes);
    SliceOf::Copy(buf)
}

pub(crate) enum SliceOf {
    Whole(wgpu::Buffer),
    Copy(PooledBuffer),
}

impl std::ops::Deref for SliceOf {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        match self {
            SliceOf::Whole(b) => b,
            SliceOf::Copy(b) => b,
        }
    }
}

/// Checks `input` against `shape` and the policy against the shape; returns the value count.
pub(crate) fn check_input(input: &wgpu::Buffer, shape: &[usize], policy: &Policy) -> Result<usize> {
    if shape.is_empty() || shape.len() > 4 || shape.contains(&0) {
        return Err(FdsrError::InvalidTensor(format!("shape {shape:?} is not a non-empty tensor of rank 1..=4")));
    }
    let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).filter(|&n| (n as u64) < 1 << 40);
    let numel = numel.ok_or_else(|| FdsrError::InvalidTensor(format!("shape {shape:?} is too large")))?;
    if input.size() < numel as u64 * 4 {
        return Err(FdsrError::InvalidTensor(format!(
            "input buffer of {} bytes cannot hold {numel} f32 values",
            input.size()
        )));
    }
    policy.validate()?;
    if matches!(policy, Policy::Division) && shape.len() != 4 {
        return Err(FdsrError::InvalidTensor(format!("division needs a 4-D [N, C, H, W] shape, got {shape:?}")));
    }
    Ok(numel)
}

/// Records the encode of `input` (f32 values of `shape`, `STORAGE | COPY_SRC`) with `policy`
/// into regions of `category`; `acc` (the store's window totals, 16 bytes) receives what the
/// device alone knows (fdsr's bytes used, reuse counts). Nothing is read back or waited for.
#[allow(clippy::too_many_arguments)]
pub fn record_encode(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    input: &wgpu::Buffer,
    shape: &[usize],
    policy: &Policy,
    opts: &CodecOptions,
    category: Category,
    acc: &wgpu::Buffer,
) -> Result<Resident> {
    let numel = check_input(input, shape, policy)?;
    let tables = Tables::buffer(ctx);
    let mut out = Resident { shape: shape.to_vec(), policy: policy.clone(), opts: *opts, segments: Vec::new() };
    match policy {
        Policy::Uniform { bits } => record_uniform(ctx, enc, &tables, input, numel, *bits, category, &mut out)?,
        Policy::Fdsr(cfg) if shape.len() != 4 => {
            let bits = flat_bits(cfg, numel)?;
            out.policy = Policy::Uniform { bits };
            record_uniform(ctx, enc, &tables, input, numel, bits, category, &mut out)?
        }
        Policy::Lossless => {
            let seg = region(ctx, category, HEADER_WORDS + numel as u64);
            enc.copy_buffer_to_buffer(input, 0, &seg, HEADER_WORDS * 4, numel as u64 * 4);
            out.segments.push(Segment {
                first_value: 0,
                values: numel as u64,
                region: seg,
                form: SegmentForm::Lossless,
            });
        }
        Policy::Division => {
            let (planes, h, w) = ((shape[0] * shape[1]) as u64, shape[2], shape[3]);
            let plane = (h * w) as u64;
            for (p0, count) in segments(planes, plane * 4, ctx.max_binding_bytes())? {
                let layout = DivisionLayout::new(count, h as u64, w as u64);
                let seg = region(ctx, category, layout.words);
                let x = slice(ctx, enc, input, p0 * plane * 4, count * plane * 4, planes * plane * 4);
                let job = flat::DivisionJob { ctx, tables: &tables, layout, hw: (h, w), base: p0 * plane, opts };
                let st = job.stats(enc, &x, &seg)?;
                job.e0(enc, &st, &seg)?;
                job.pack(enc, &x, &st, &seg)?;
                let form = SegmentForm::Division { layout, hw: (h, w) };
                out.segments.push(Segment { first_value: p0 * plane, values: count * plane, region: seg, form });
            }
        }
        Policy::Fdsr(cfg) => record_fdsr(ctx, enc, &tables, input, shape, cfg, opts, category, acc, &mut out)?,
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn record_uniform(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    tables: &wgpu::Buffer,
    input: &wgpu::Buffer,
    numel: usize,
    bits: u8,
    category: Category,
    out: &mut Resident,
) -> Result<()> {
    let groups = numel.div_ceil(GROUP_SIZE) as u64;
    for (g0, count) in segments(groups, GROUP_SIZE as u64 * 4, ctx.max_binding_bytes())? {
        let v0 = g0 * GROUP_SIZE as u64;
        let n = (count * GROUP_SIZE as u64).min(numel as u64 - v0);
        let layout = UniformLayout::new(n, bits);
        let seg = region(ctx, category, layout.words);
        let x = slice(ctx, enc, input, v0 * 4, n * 4, numel as u64 * 4);
        let job = flat::UniformJob { ctx, tables, layout, base: v0, opts: &out.opts };
        let st = job.stats(enc, &x, &seg)?;
        job.e0(enc, &st, &seg)?;
        job.pack(enc, &x, &st, &seg)?;
        out.segments.push(Segment { first_value: v0, values: n, region: seg, form: SegmentForm::Uniform(layout) });
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn record_fdsr(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    tables: &wgpu::Buffer,
    input: &wgpu::Buffer,
    shape: &[usize],
    cfg: &FdsrConfig,
    opts: &CodecOptions,
    category: Category,
    acc: &wgpu::Buffer,
    out: &mut Resident,
) -> Result<()> {
    let (planes, h, w) = ((shape[0] * shape[1]) as u64, shape[2], shape[3]);
    let plane = (h * w) as u64;
    for (p0, count) in segments(planes, plane * 4, ctx.max_binding_bytes())? {
        let geom = fdsr::SegmentGeom::new(p0, count, h, w);
        let layout = fdsr::layout(&geom, cfg)?;
        let seg = region(ctx, category, layout.words);
        let stats = ctx.pool.get(&ctx.device, Category::Workspace, layout::STAT_WORDS * 4, STORAGE_USAGE);
        let x = slice(ctx, enc, input, p0 * plane * 4, count * plane * 4, planes * plane * 4);
        let job = fdsr::Job { ctx, tables, g: geom, layout, cfg, opts };
        let a = job.analyze(enc, &x)?;
        let placed = job.allocate(enc, &a, &seg, (&stats, acc))?;
        job.pack(enc, &x, &a, &seg, (&stats, acc), placed)?;
        // On wasm32 wgpu resources are neither Send nor Sync; the Arc only shares ownership there.
        #[allow(clippy::arc_with_non_send_sync)]
        let stats = Arc::new(stats);
        let form = SegmentForm::Fdsr { geom, layout, stats };
        out.segments.push(Segment { first_value: p0 * plane, values: count * plane, region: seg, form });
    }
    Ok(())
}

/// Records the decode of `r` into `out` (`numel` f32 values, `STORAGE | COPY_DST`).
pub fn record_decode(ctx: &GpuContext, enc: &mut wgpu::CommandEncoder, r: &Resident, out: &wgpu::Buffer) -> Result<()> {
    if out.size() < r.numel() * 4 {
        return Err(FdsrError::InvalidTensor(format!("an output of {} bytes cannot hold {:?}", out.size(), r.shape)));
    }
    let tables = Tables::buffer(ctx);
    let whole = r.segments.len() == 1;
    for s in &r.segments {
        if let SegmentForm::Lossless = s.form {
            enc.copy_buffer_to_buffer(&s.region, HEADER_WORDS * 4, out, s.first_value * 4, s.values * 4);
            continue;
        }
        let temp = (!whole).then(|| ctx.pool.get(&ctx.device, Category::Workspace, s.values * 4, STORAGE_USAGE));
        let dst: &wgpu::Buffer = temp.as_deref().unwrap_or(out);
        match &s.form {
            SegmentForm::Uniform(layout) => {
                flat::UniformJob { ctx, tables: &tables, layout: *layout, base: s.first_value, opts: &r.opts }
                    .decode(enc, &s.region, dst)?
            }
            SegmentForm::Division { layout, hw } => {
                flat::DivisionJob { ctx, tables: &tables, layout: *layout, hw: *hw, base: s.first_value, opts: &r.opts }
                    .decode(enc, &s.region, dst)?
            }
            SegmentForm::Fdsr { geom, layout, .. } => {
                let Policy::Fdsr(cfg) = &r.policy else {
                    return Err(FdsrError::InvalidConfig("an fdsr segment of another policy".into()));
                };
                fdsr::record_decode(ctx, enc, &tables, geom, layout, &cfg.band_edges, &s.region, dst)?
            }
            SegmentForm::Lossless => {}
        }
        if let Some(t) = &temp {
            enc.copy_buffer_to_buffer(t, 0, out, s.first_value * 4, s.values * 4);
        }
    }
    Ok(())
}
