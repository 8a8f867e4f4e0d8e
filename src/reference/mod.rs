//! Pure-Rust oracle of every GPU stage (no wgpu): the specification in executable form.

pub mod dct;
pub mod pack;
pub mod quant;
