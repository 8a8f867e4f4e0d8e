//! GPU runtime: device context, pipeline cache, pooled buffers with byte accounting, readback,
//! transfer accounting.

mod context;
mod coop;
pub mod kernel;
mod pipelines;
mod pool;
mod profiler;
mod readback;
mod transfer;
pub(crate) use wait::wait_for_map;
#[cfg(not(target_arch = "wasm32"))]
#[path = "wait_native.rs"]
mod wait;
#[cfg(target_arch = "wasm32")]
#[path = "wait_web.rs"]
mod wait;

pub use context::{ContextOptions, GpuContext, GPU_TARGET_GROUPS};
pub use coop::{coop_path, coop_regions, coop_rounds, Compute, ComputePath, CoopOffer, COOP_FRAGMENTS, COOP_WORKGROUP};
pub use pipelines::{Constants, PipelineCache};
pub use pool::{BufferPool, Category, MemoryReport, PooledBuffer, CATEGORIES, STORAGE_USAGE};
pub use profiler::{Profiler, Timings, Work};
pub use readback::{read_buffer, read_words};
pub use transfer::{TransferCounts, Transfers};
