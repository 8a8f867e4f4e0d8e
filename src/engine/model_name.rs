//! Which model: the architectures' names and the input and output sizes they share. It sits
//! below the models themselves so that the precision policies' layer geometry can name them
//! without importing the layers.

use std::fmt;
use std::str::FromStr;

use crate::error::{FdsrError, Result};

/// Side of the square model input.
pub const INPUT_SIDE: usize = 32;
/// Output classes.
pub const CLASSES: usize = 10;

/// Which architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelName {
    /// Five 3×3 conv-BN-ReLU layers (32, 32, pool, 64, 64, pool, 128), GAP, linear.
    Cnn,
    /// CIFAR-style ResNet-20 (16/32/64 channels, 3 blocks per stage).
    Resnet20,
    /// Two conv-BN-ReLU-pool layers (8, 16 channels), flatten, linear: tests and the browser.
    Tiny,
}

impl FromStr for ModelName {
    type Err = FdsrError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cnn" => Ok(ModelName::Cnn),
            "resnet20" => Ok(ModelName::Resnet20),
            "tiny" => Ok(ModelName::Tiny),
            _ => Err(FdsrError::InvalidConfig(format!("unknown model '{s}' (expected cnn, resnet20 or tiny)"))),
        }
    }
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModelName::Cnn => "cnn",
            ModelName::Resnet20 => "resnet20",
            ModelName::Tiny => "tiny",
        })
    }
}
