//! fdsr visualizer: trains a small CNN live on the GPU with compressed saved activations and
//! shows what the codec does (curves, memory, bits per band, band energy, tile classes, reuse,
//! the codec story of one tile, the ratio–accuracy frontier and a DCT basis explorer, beside the
//! same run with fp32 activations). One app, native and in the browser.
#![warn(missing_docs)]

pub mod activation;
pub mod app;
pub mod budget;
pub mod data;
pub mod fit;
pub mod frontier;
pub mod history;
pub mod panels;
pub mod platform;
pub mod run;
pub mod settings;
pub mod status;
pub mod story;
pub mod timeline;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use app::{App, RunSlot};
pub use run::{Data, Run};
pub use settings::Settings;
