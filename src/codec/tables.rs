//! The host tables every codec shader reads at binding 0 (DCT basis, scale tables, zig-zag order).

use crate::gpu::GpuContext;
use crate::reference::{dct, quant};

/// Mirror of `Tables` in `shaders/common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tables {
    /// DCT basis `B[k*8+n]`.
    pub basis: [f32; 64],
    /// `T[k] = 2^(k/8)`.
    pub scale_t: [f32; 8],
    /// `I[k] = 2^(-k/8)`.
    pub scale_i: [f32; 8],
    /// Zig-zag index to raster index.
    pub zigzag: [u32; 64],
}

impl Tables {
    /// The tables of docs/CODEC.md, computed exactly as the reference computes them.
    pub fn new() -> Self {
        let (scale_t, scale_i) = quant::scale_tables();
        Self { basis: dct::dct_basis(), scale_t, scale_i, zigzag: dct::ZIGZAG.map(u32::from) }
    }

    /// The tables in a uniform buffer, made once per context.
    pub fn buffer(ctx: &GpuContext) -> wgpu::Buffer {
        ctx.constant_uniform("codec tables", || bytemuck::bytes_of(&Self::new()).to_vec())
    }
}

impl Default for Tables {
    fn default() -> Self {
        Self::new()
    }
}
