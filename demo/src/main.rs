//! fdsr visualizer, native: `fdsr-demo [--data DIR] [--settings model=tiny&policy=fdsr&…]
//! [--bench-steps N]`. With `--bench-steps` it trains N steps without a window and prints the
//! run's status as JSON (steps per second, time to the first step).

#[cfg(not(target_arch = "wasm32"))]
mod native_main;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    native_main::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
