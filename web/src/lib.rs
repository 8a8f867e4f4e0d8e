//! Browser entry points, exported to JavaScript with wasm-bindgen: the smoke run on WebGPU and
//! the visualizer.

use wasm_bindgen::prelude::*;

/// Runs the smoke compression on the browser's GPU; resolves to the result as a JSON string.
#[wasm_bindgen]
pub async fn run_smoke(seed: u32) -> Result<String, JsValue> {
    let ctx = fdsr::GpuContext::new().await.map_err(|e| JsValue::from_str(&e.to_string()))?;
    let r = fdsr::bench::smoke::run(&ctx, seed).await.map_err(|e| JsValue::from_str(&e.to_string()))?;
    Ok(r.to_json())
}

/// Starts the visualizer on the canvas with id `canvas_id` (settings from the URL hash).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen]
pub async fn start_demo(canvas_id: String) -> Result<(), JsValue> {
    fdsr_demo::web::start(&canvas_id).await
}
