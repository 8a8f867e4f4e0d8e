//! The codec: the device-resident stored forms and their kernels' drivers, the file path that
//! reads them back, and the serialized form (the policies, bodies and allocation rule it
//! implements live in [`crate::rules`], re-exported here).

pub mod api;
pub mod bits;
pub mod file;
pub mod resident;
pub mod reuse_gpu;
pub mod serialize;
pub mod tables;

pub use crate::rules::{alloc, config, format};
