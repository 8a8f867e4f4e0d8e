//! The training engine: GPU tensors, ops with their forward and backward, models, optimizers
//! and the trainer. Saved activations go through one store, where compression plugs in.

pub mod batch;
pub mod blocks;
pub mod checkpoint;
pub mod controller;
pub mod gate;
pub mod gemm;
pub mod layers;
pub mod model;
pub mod model_name;
pub mod ops;
pub mod optim;
pub mod param;
pub mod pass;
pub mod precision;
pub mod quantized;
pub mod saved;
pub mod session;
pub mod tensor;
pub mod trainer;

pub use model::{Model, ModelName};
pub use session::Session;
pub use tensor::Tensor;
pub use trainer::{Metrics, TrainConfig, Trainer};
