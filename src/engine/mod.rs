//! The training engine: GPU tensors, ops with their forward and backward, models, optimizers
//! and the trainer. Saved activations go through one store, where compression plugs in.

pub mod gemm;
pub mod ops;
pub mod tensor;

pub use tensor::Tensor;
