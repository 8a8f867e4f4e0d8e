//! The visualizer's panels, one file each, drawn from the run's history.

pub mod basis;
pub mod codec;
pub mod curves;
pub mod fmap;
pub mod frontier;
pub mod heat;
pub mod memory;
pub mod story;
