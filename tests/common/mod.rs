//! Helpers shared by the GPU integration tests: a context, or a skip when there is no adapter.
#![allow(dead_code)]

use fdsr::gpu::ContextOptions;
use fdsr::GpuContext;

/// A GPU context on the default adapter, or `None` (after printing why) when there is none.
///
/// With `REQUIRE_GPU=1` a missing adapter is a failure instead of a skip.
pub fn gpu() -> Option<GpuContext> {
    gpu_with(ContextOptions::default())
}

/// Like [`gpu`], with explicit context options (e.g. a small binding limit to force chunking).
pub fn gpu_with(opts: ContextOptions) -> Option<GpuContext> {
    match pollster::block_on(GpuContext::with_options(opts)) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("REQUIRE_GPU=1 but no GPU context: {e}");
            }
            eprintln!("skipping: no GPU adapter ({e})");
            None
        }
    }
}
