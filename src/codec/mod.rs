//! The codec: policies, the stored format and the GPU drivers of every stage.

pub mod alloc;
pub mod api;
pub mod bits;
pub mod config;
pub mod division_gpu;
pub mod fdsr_decode_gpu;
pub mod fdsr_gpu;
pub mod format;
pub mod lossless_gpu;
pub mod reuse_gpu;
pub mod scan;
pub mod serialize;
pub mod tables;
pub mod uniform_gpu;
