//! The stored format's data and pure rules, below both the codec that implements them and the
//! reference that judges it: policies and options ([`config`]), the stored bodies ([`mod@format`]),
//! their exact sizes ([`sizes`]) and the bit allocation under a budget ([`alloc`]). Nothing here
//! touches a device, and nothing here imports the codec or the reference.

pub mod alloc;
pub mod config;
pub mod format;
pub mod sizes;
