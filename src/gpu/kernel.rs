//! Dispatch helpers: bind buffers in layout order and launch enough workgroups on a 2-D grid.

use super::pipelines::Constants;
use super::GpuContext;
use crate::error::Result;
use wgpu::util::DeviceExt;

/// Most workgroups per grid dimension (WebGPU's default limit).
pub const MAX_GROUPS_PER_DIM: u32 = 65535;

/// A 2-D grid covering `groups` workgroups (kernels linearize with `group_index`).
pub fn grid(groups: u32) -> (u32, u32) {
    let groups = groups.max(1);
    if groups <= MAX_GROUPS_PER_DIM {
        (groups, 1)
    } else {
        let y = groups.div_ceil(MAX_GROUPS_PER_DIM);
        (groups.div_ceil(y), y)
    }
}

/// What a kernel binds: a whole buffer, or the range of one that a tensor views (a parameter in
/// its arena). Every binding of a dispatch goes through [`Bindable::binding`].
pub trait Bindable {
    /// The buffer range to bind.
    fn binding(&self) -> wgpu::BufferBinding<'_>;
}

impl Bindable for wgpu::Buffer {
    fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.as_entire_buffer_binding()
    }
}

impl Bindable for wgpu::BufferBinding<'_> {
    fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.clone()
    }
}

impl Bindable for super::PooledBuffer {
    fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.as_entire_buffer_binding()
    }
}

impl<T: Bindable + ?Sized> Bindable for &T {
    fn binding(&self) -> wgpu::BufferBinding<'_> {
        (**self).binding()
    }
}

/// Records one dispatch of `entry` of `shader` over `groups` workgroups with `buffers` bound
/// to bindings 0, 1, … of group 0.
pub fn dispatch(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    shader: &'static str,
    entry: &'static str,
    buffers: &[&dyn Bindable],
    groups: u32,
) -> Result<()> {
    let (x, y) = grid(groups);
    dispatch_grid(ctx, enc, shader, entry, buffers, [x, y, 1])
}

/// Records one dispatch of `entry` of `shader` over an explicit `[x, y, z]` grid of workgroups.
pub fn dispatch_grid(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    shader: &'static str,
    entry: &'static str,
    buffers: &[&dyn Bindable],
    grid: [u32; 3],
) -> Result<()> {
    dispatch_with(ctx, enc, (shader, entry, &[]), buffers, grid)
}

/// Records one dispatch of `entry` of `shader`, its override `constants` set, over `[x, y, z]`.
pub fn dispatch_with(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    kernel: (&'static str, &'static str, Constants<'_>),
    buffers: &[&dyn Bindable],
    grid: [u32; 3],
) -> Result<()> {
    launch(ctx, enc, kernel, buffers, Launch::Grid(grid))
}

/// Records one dispatch of `entry` of `shader` whose grid the device wrote: three u32 at byte
/// `offset` of `args` (a buffer with `INDIRECT` usage). A grid of zero workgroups runs nothing.
pub fn dispatch_indirect(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    kernel: (&'static str, &'static str, Constants<'_>),
    buffers: &[&dyn Bindable],
    (args, offset): (&wgpu::Buffer, u64),
) -> Result<()> {
    launch(ctx, enc, kernel, buffers, Launch::Indirect(args, offset))
}

enum Launch<'a> {
    Grid([u32; 3]),
    Indirect(&'a wgpu::Buffer, u64),
}

fn launch(
    ctx: &GpuContext,
    enc: &mut wgpu::CommandEncoder,
    (shader, entry, constants): (&'static str, &'static str, Constants<'_>),
    buffers: &[&dyn Bindable],
    how: Launch<'_>,
) -> Result<()> {
    let pipeline = ctx.pipelines.get_with(&ctx.device, shader, entry, constants)?;
    ctx.transfers.dispatch();
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: wgpu::BindingResource::Buffer(b.binding()) })
        .collect();
    let bind = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(entry),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let slot = ctx.profiler.next_slot(entry);
    let timestamp_writes = slot.as_ref().map(|(set, i)| wgpu::ComputePassTimestampWrites {
        query_set: set,
        beginning_of_pass_write_index: Some(*i),
        end_of_pass_write_index: Some(*i + 1),
    });
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(entry), timestamp_writes });
    pass.set_pipeline(&pipeline);
    pass.set_bind_group(0, &bind, &[]);
    match how {
        Launch::Grid([x, y, z]) => pass.dispatch_workgroups(x, y, z),
        Launch::Indirect(args, offset) => pass.dispatch_workgroups_indirect(args, offset),
    }
    Ok(())
}

/// A uniform buffer holding `value`.
pub fn uniform<T: bytemuck::Pod>(ctx: &GpuContext, label: &str, value: &T) -> wgpu::Buffer {
    ctx.transfers.upload(std::mem::size_of::<T>() as u64);
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytemuck::bytes_of(value),
        usage: wgpu::BufferUsages::UNIFORM,
    })
}

/// A storage buffer initialized with `data` (at least 4 bytes, so empty inputs stay bindable).
pub fn storage_init(ctx: &GpuContext, label: &str, data: &[u8]) -> wgpu::Buffer {
    let mut contents = data.to_vec();
    contents.resize(data.len().max(4).next_multiple_of(4), 0);
    ctx.transfers.upload(contents.len() as u64);
    ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &contents,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    })
}

/// A zero-filled storage buffer of `bytes` (at least 4).
pub fn storage_zeroed(ctx: &GpuContext, label: &str, bytes: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).next_multiple_of(4),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Submits the encoder's work inside error scopes named `stage`.
pub async fn submit(ctx: &GpuContext, stage: &str, enc: wgpu::CommandEncoder) -> Result<()> {
    ctx.scoped(stage, || {
        ctx.submit(enc);
    })
    .await
}
