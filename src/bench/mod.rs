//! Benchmarks that print ratios measured side by side in one run (quality, codec speed, the
//! largest batch under a memory cap).

pub mod activations;
pub mod memory;
pub mod quality;
#[cfg(not(target_arch = "wasm32"))]
pub mod reuse;
pub mod smoke;
#[cfg(not(target_arch = "wasm32"))]
pub mod speed;
#[cfg(not(target_arch = "wasm32"))]
pub mod train;
