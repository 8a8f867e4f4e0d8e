//! Tensors in and out of files: `.npy` reading (float32 or float16, C order, rank 1 to 4), `.npy`
//! float32 writing, safetensors checkpoints ([`safetensors`]), and atomic file writes for every
//! output of the CLI.
//!
//! Parsing works on bytes and compiles everywhere (the browser can hand over a file's bytes); the
//! file functions ([`read_npy`], [`write_npy`], [`write_atomic`]) are native only. Malformed input of
//! any kind is an [`FdsrError`] whose message names the problem, never a panic.
//!
//! ```
//! use fdsr::io::Tensor;
//! let t = Tensor::new(vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0])?;
//! let bytes = t.to_npy_bytes();
//! assert_eq!(Tensor::from_npy_bytes(&bytes)?, t);
//! # Ok::<(), fdsr::FdsrError>(())
//! ```

use crate::error::{FdsrError, Result};

#[cfg(not(target_arch = "wasm32"))]
mod fs;
mod npy_header;
pub mod safetensors;
#[cfg(test)]
mod tests;

#[cfg(not(target_arch = "wasm32"))]
pub use fs::{read_npy, write_atomic, write_npy};

/// Highest rank fdsr accepts; rank 4 is `[N, C, H, W]`.
pub const MAX_RANK: usize = 4;

/// A dense float32 tensor in C (row-major) order.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Dimensions, slowest first; rank 1 to [`MAX_RANK`], none zero.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values in C order.
    pub data: Vec<f32>,
}

impl Tensor {
    /// A tensor of `shape` holding `data`, after checking rank, emptiness and length.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Tensor> {
        let count = checked_count(&shape).map_err(FdsrError::InvalidTensor)?;
        if count != data.len() {
            return Err(FdsrError::InvalidTensor(format!(
                "shape {shape:?} holds {count} values but {} were given",
                data.len()
            )));
        }
        Ok(Tensor { shape, data })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// `true` when the tensor holds no value (never for a tensor built by [`Tensor::new`]).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Fails on the first NaN or infinity, naming its flat index, its multi-index and the value.
    pub fn check_finite(&self) -> Result<()> {
        match self.data.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(i) => Err(FdsrError::InvalidTensor(format!(
                "value {} at index {i} {:?} is not finite",
                self.data[i],
                unravel(i, &self.shape)
            ))),
        }
    }

    /// Parses the bytes of an `.npy` file: float32 or float16, little- or big-endian, C order,
    /// rank 1 to 4, non-empty, with exactly the data its header announces.
    pub fn from_npy_bytes(bytes: &[u8]) -> Result<Tensor> {
        parse_npy(bytes).map_err(FdsrError::InvalidTensor)
    }

    /// The bytes of a little-endian float32 C-order `.npy` file (format 1.0) holding this tensor.
    pub fn to_npy_bytes(&self) -> Vec<u8> {
        let mut out = npy_header::encode_f32(&self.shape);
        out.reserve(self.data.len() * 4);
        for v in &self.data {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }
}

/// Number of values of `shape`, or why that shape is not acceptable.
fn checked_count(shape: &[usize]) -> Result<usize, String> {
    match shape.len() {
        0 => return Err("rank 0 (a scalar) is not supported; fdsr needs rank 1 to 4".into()),
        r if r > MAX_RANK => {
            return Err(format!("rank {r} (shape {shape:?}) is not supported; fdsr needs rank 1 to 4"))
        }
        _ => {}
    }
    if shape.contains(&0) {
        return Err(format!("empty tensor (shape {shape:?} holds no value)"));
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} has more values than this machine can address"))
}

/// Flat index → multi-index in C order.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (slot, &d) in idx.iter_mut().zip(shape).rev() {
        *slot = i % d.max(1);
        i /= d.max(1);
    }
    idx
}

/// `.npy` bytes → tensor, with a message (without a path) on failure.
fn parse_npy(bytes: &[u8]) -> Result<Tensor, String> {
    let header = npy_header::parse(bytes)?;
    let count = checked_count(&header.shape)?;
    let need = count.checked_mul(header.elem.size()).ok_or_else(|| format!("shape {:?} is too large", header.shape))?;
    let body = &bytes[header.data_offset..];
    if body.len() < need {
        return Err(format!(
            "truncated data: shape {:?} needs {need} bytes after the header, the file has {}",
            header.shape,
            body.len()
        ));
    }
    if body.len() > need {
        return Err(format!(
            "{} unexpected bytes after the {need} bytes of data that shape {:?} needs",
            body.len() - need,
            header.shape
        ));
    }
    let be = header.big_endian;
    let data: Vec<f32> = match header.elem {
        npy_header::Elem::F32 => body
            .chunks_exact(4)
            .map(|c| {
                let b = [c[0], c[1], c[2], c[3]];
                if be {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                }
            })
            .collect(),
        npy_header::Elem::F16 => body
            .chunks_exact(2)
            .map(|c| {
                let b = [c[0], c[1]];
                let bits = if be { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) };
                half::f16::from_bits(bits).to_f32()
            })
            .collect(),
    };
    Ok(Tensor { shape: header.shape, data })
}
