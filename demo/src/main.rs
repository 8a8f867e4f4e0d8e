//! fdsr visualizer, native: `fdsr-demo [--data DIR] [--settings model=tiny&policy=fdsr&…]
//! [--bench-steps N] [--write-subset DIR] [--status-file PATH]`. With `--bench-steps` it trains N steps without a window
//! and prints the run's status as JSON (steps per second, time to the first step);
//! `--write-subset` writes the run's Fashion-MNIST subset as IDX files (the browser bundle's data);
//! `--status-file` keeps the same JSON up to date in a file while the window runs.

#[cfg(not(target_arch = "wasm32"))]
mod native_main;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    native_main::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
