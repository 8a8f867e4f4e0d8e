//! Milestones of the page's start-up on the browser's performance timeline (`web/demo.mjs` prints
//! them); natively nothing, where `first_step_s` in the status says enough.

/// Adds a `performance.mark(name)` to the page's timeline (its time counts from the start of the
/// navigation).
#[cfg(target_arch = "wasm32")]
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        // A mark only fails on a name the User Timing API reserves: nothing to do.
        let _ = p.mark(name);
    }
}

/// Natively a milestone is not recorded.
#[cfg(not(target_arch = "wasm32"))]
pub fn mark(_name: &str) {}
