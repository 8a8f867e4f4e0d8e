//! Typed errors of the library; every message names the offending value.

use thiserror::Error;

/// Everything that can go wrong in fdsr.
#[derive(Debug, Error)]
pub enum FdsrError {
    /// No GPU adapter could be found.
    #[error("no GPU adapter found{detail}; install a driver (on Debian the software Vulkan driver is `apt-get install --no-install-recommends mesa-vulkan-drivers`) or set WGPU_BACKEND / WGPU_ADAPTER_NAME")]
    NoAdapter {
        /// Extra context (requested backend or adapter name).
        detail: String,
    },
    /// The adapter refused to create a device.
    #[error("could not create a GPU device on {adapter}: {reason}")]
    Device {
        /// Adapter name.
        adapter: String,
        /// The driver's reason.
        reason: String,
    },
    /// A GPU validation or out-of-memory error caught by an error scope.
    #[error("GPU error in {stage}: {message}")]
    Gpu {
        /// The codec or engine stage.
        stage: String,
        /// wgpu's message.
        message: String,
    },
    /// A buffer could not be read back.
    #[error("GPU readback failed: {0}")]
    Readback(String),
    /// The input tensor is not acceptable.
    #[error("invalid tensor: {0}")]
    InvalidTensor(String),
    /// A configuration value is out of range or malformed.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The bit budget cannot even pay for the metadata.
    #[error("budget {budget} bits/value is below the {needed:.4} bits/value that the metadata alone needs")]
    BudgetTooLow {
        /// Requested budget in bits per value.
        budget: f64,
        /// Minimum bits per value the format needs.
        needed: f64,
    },
    /// Serialized bytes are malformed, truncated or inconsistent.
    #[error("corrupt compressed data: {0}")]
    Corrupt(String),
    /// A safetensors file (a checkpoint) is malformed, truncated or inconsistent.
    #[error("invalid safetensors data: {0}")]
    Safetensors(String),
    /// File or stream I/O.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Result alias of the library.
pub type Result<T, E = FdsrError> = std::result::Result<T, E>;
