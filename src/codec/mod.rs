//! The codec: policies, the stored format and the GPU drivers of every stage.

pub mod alloc;
pub mod config;
pub mod format;
pub mod serialize;
