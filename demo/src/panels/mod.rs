//! The visualizer's panels, one file each, drawn from the run's history.

pub mod basis;
pub mod codec;
pub mod curves;
pub mod heat;
pub mod inspector;
pub mod memory;
