//! # fdsr — activation compression on any GPU
//!
//! FDSR's codec (block DCT, adaptive bits per frequency band, sparsification) as `wgpu` compute
//! shaders with a pure-Rust reference. See `docs/CODEC.md` for the exact format.
#![warn(missing_docs)]

pub mod bench;
pub mod codec;
pub mod data;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod io;
pub mod reference;
pub mod rules;
pub mod shaders;

pub use codec::config::{BitChoice, CodecOptions, FdsrConfig, Policy, ReuseConfig, Rounding};
pub use codec::format::{Body, Compressed, TileClass};
pub use error::{FdsrError, Result};
pub use gpu::GpuContext;
pub use reference::reuse::ReuseStats;
