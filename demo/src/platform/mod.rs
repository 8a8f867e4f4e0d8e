//! What differs between native and the browser: how a task runs and what the page can see.

#[cfg(not(target_arch = "wasm32"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
pub use native::{publish, spawn};

#[cfg(target_arch = "wasm32")]
compile_error!("the browser build of the visualizer (spawn_local, the page's status) is not written yet");
