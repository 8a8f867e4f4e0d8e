//! The codec: policies, the stored format, the device-resident stored forms and their kernels'
//! drivers, and the file path that reads them back.

pub mod alloc;
pub mod api;
pub mod bits;
pub mod config;
pub mod file;
pub mod format;
pub mod resident;
pub mod reuse_gpu;
pub mod scan;
pub mod serialize;
pub mod tables;
