//! Browser: a task runs on the page's event loop (a frame never waits for the GPU), the run's
//! status is published as `window.fdsrDemo` and the start-up's milestones as `performance`
//! marks, for the page and its test.

use std::future::Future;

use wasm_bindgen::JsValue;

use crate::status::Status;

/// Starts `task` on the page's event loop and returns at once.
pub fn spawn(task: impl Future<Output = ()> + 'static) {
    wasm_bindgen_futures::spawn_local(task);
}

/// Sets `window.fdsrDemo` to the status (an object parsed from its JSON).
pub fn publish(status: &Status) {
    if let Ok(v) = js_sys::JSON::parse(&status.to_json()) {
        // Setting a property of the global object only fails on a frozen global: nothing to do.
        let _ = js_sys::Reflect::set(&js_sys::global(), &JsValue::from_str("fdsrDemo"), &v);
    }
}

/// Adds a `performance.mark(name)` to the page's timeline (its time counts from the start of the
/// navigation; `web/demo.mjs` prints them).
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        // A mark only fails on a name the User Timing API reserves: nothing to do.
        let _ = p.mark(name);
    }
}
