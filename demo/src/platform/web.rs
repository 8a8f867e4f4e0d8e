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
