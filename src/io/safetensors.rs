//! Checkpoints in the safetensors format, read and written by the `safetensors` crate (the
//! format's own implementation) behind this project's stricter layer: an 8-byte little-endian
//! header length `N`, `N` bytes of JSON header, then the tensors' bytes.
//!
//! The header is `{"__metadata__": {"key": "string value", …}, "name": {"dtype": "F32", "shape":
//! [2, 3], "data_offsets": [begin, end]}, …}`, offsets relative to the first byte after the header.
//! The crate checks the header's JSON, that the offsets tile the data exactly and that each
//! tensor's bytes are what its dtype and shape need; this layer adds what a checkpoint needs on
//! top: only F32, U32, U8 and I64 tensors are accepted (any other dtype is refused by name), every
//! truncation or trailing byte is reported with the byte counts, the writer refuses duplicate or
//! reserved names and data of the wrong length, and every problem is an [`FdsrError`] whose
//! message names it — never a panic. Tensors come back sorted by name, metadata sorted by key.
//! Files written by fdsr before it used the crate (names sorted, metadata first) read the same.
//!
//! ```
//! use fdsr::io::safetensors::{NamedTensor, SafeTensors};
//! let st = SafeTensors {
//!     tensors: vec![NamedTensor::from_f32("w", vec![2], &[1.0, -2.0])],
//!     metadata: vec![("step".into(), "7".into())],
//! };
//! let back = SafeTensors::from_bytes(&st.to_bytes()?)?;
//! assert_eq!(back.f32("w")?, vec![1.0, -2.0]);
//! assert_eq!(back.meta("step"), Some("7"));
//! # Ok::<(), fdsr::FdsrError>(())
//! ```

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::fmt;

use crate::error::{FdsrError, Result};
use safetensors::tensor::{Metadata, SafeTensorError, View};

/// Largest header accepted by the reader, in bytes (the reference implementation's limit).
pub const MAX_HEADER_LEN: u64 = 100_000_000;
/// The header key that holds the string metadata.
pub const METADATA_KEY: &str = "__metadata__";

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit float, little-endian.
    F32,
    /// 32-bit unsigned integer, little-endian.
    U32,
    /// Unsigned byte.
    U8,
    /// 64-bit signed integer, little-endian.
    I64,
}

impl Dtype {
    /// Every supported dtype.
    pub const ALL: [Dtype; 4] = [Dtype::F32, Dtype::U32, Dtype::U8, Dtype::I64];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::U8 => 1,
            Dtype::F32 | Dtype::U32 => 4,
            Dtype::I64 => 8,
        }
    }

    /// The header's name: `F32`, `U32`, `U8` or `I64`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::U32 => "U32",
            Dtype::U8 => "U8",
            Dtype::I64 => "I64",
        }
    }
}

impl Dtype {
    /// The crate's dtype.
    fn to_crate(self) -> safetensors::Dtype {
        match self {
            Dtype::F32 => safetensors::Dtype::F32,
            Dtype::U32 => safetensors::Dtype::U32,
            Dtype::U8 => safetensors::Dtype::U8,
            Dtype::I64 => safetensors::Dtype::I64,
        }
    }

    /// Ours for the crate's dtype, or `None` for one that fdsr does not read.
    fn from_crate(d: safetensors::Dtype) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|ours| ours.to_crate() == d)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One tensor: its name, dtype, shape and raw little-endian bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedTensor {
    /// Unique name (any string except [`METADATA_KEY`]).
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions, slowest first; `[]` is a scalar, a zero dimension an empty tensor.
    pub shape: Vec<usize>,
    /// `shape.iter().product() · dtype.size()` bytes, little-endian, C order.
    pub data: Vec<u8>,
}

impl NamedTensor {
    /// An F32 tensor (`values.len()` should match `shape`; [`SafeTensors::to_bytes`] checks).
    pub fn from_f32(name: impl Into<String>, shape: Vec<usize>, values: &[f32]) -> NamedTensor {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        NamedTensor { name: name.into(), dtype: Dtype::F32, shape, data }
    }

    /// A U32 tensor.
    pub fn from_u32(name: impl Into<String>, shape: Vec<usize>, values: &[u32]) -> NamedTensor {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        NamedTensor { name: name.into(), dtype: Dtype::U32, shape, data }
    }

    /// An I64 tensor.
    pub fn from_i64(name: impl Into<String>, shape: Vec<usize>, values: &[i64]) -> NamedTensor {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        NamedTensor { name: name.into(), dtype: Dtype::I64, shape, data }
    }

    /// A U8 tensor.
    pub fn from_u8(name: impl Into<String>, shape: Vec<usize>, values: &[u8]) -> NamedTensor {
        NamedTensor { name: name.into(), dtype: Dtype::U8, shape, data: values.to_vec() }
    }

    /// Bytes that `shape` and `dtype` call for, or `None` on overflow.
    fn expected_len(&self) -> Option<usize> {
        self.shape.iter().try_fold(self.dtype.size(), |a, &d| a.checked_mul(d))
    }
}

/// A safetensors file in memory: its tensors and its string metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SafeTensors {
    /// The tensors (any order; written sorted by name).
    pub tensors: Vec<NamedTensor>,
    /// `__metadata__` entries, keys unique.
    pub metadata: Vec<(String, String)>,
}

impl SafeTensors {
    /// The file's bytes; errors on a duplicate or reserved name, a duplicate metadata key, or data
    /// whose length is not what shape and dtype call for.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let bad = |m: String| Err(FdsrError::InvalidTensor(format!("safetensors: {m}")));
        let mut order: Vec<&NamedTensor> = self.tensors.iter().collect();
        order.sort_by(|a, b| a.name.cmp(&b.name));
        for pair in order.windows(2) {
            if pair[0].name == pair[1].name {
                return bad(format!("duplicate tensor name {:?}", pair[0].name));
            }
        }
        for (i, (k, _)) in self.metadata.iter().enumerate() {
            if self.metadata[..i].iter().any(|(k2, _)| k2 == k) {
                return bad(format!("duplicate metadata key {k:?}"));
            }
        }
        for t in &order {
            if t.name == METADATA_KEY {
                return bad(format!("a tensor cannot be named {METADATA_KEY:?}"));
            }
            if t.expected_len() != Some(t.data.len()) {
                return bad(format!(
                    "tensor {:?}: {} bytes of data, but {} {:?} needs {}",
                    t.name,
                    t.data.len(),
                    t.dtype,
                    t.shape,
                    t.expected_len().map_or("more than fits in memory".into(), |n| n.to_string())
                ));
            }
        }
        let metadata = (!self.metadata.is_empty()).then(|| self.metadata.iter().cloned().collect());
        safetensors::serialize(order.into_iter().map(|t| (t.name.as_str(), t)), metadata)
            .or_else(|e| bad(e.to_string()))
    }

    /// Parses a safetensors file; every problem is a [`FdsrError::Safetensors`] naming it.
    pub fn from_bytes(bytes: &[u8]) -> Result<SafeTensors> {
        parse(bytes).map_err(FdsrError::Safetensors)
    }

    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<&NamedTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The values of F32 tensor `name`; an error if it is missing or of another dtype.
    pub fn f32(&self, name: &str) -> Result<Vec<f32>> {
        let data = self.typed(name, Dtype::F32)?;
        Ok(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// The values of U32 tensor `name`; an error if it is missing or of another dtype.
    pub fn u32(&self, name: &str) -> Result<Vec<u32>> {
        let data = self.typed(name, Dtype::U32)?;
        Ok(data.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    /// The values of I64 tensor `name`; an error if it is missing or of another dtype.
    pub fn i64(&self, name: &str) -> Result<Vec<i64>> {
        let data = self.typed(name, Dtype::I64)?;
        Ok(data.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect())
    }

    /// The metadata value of `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The bytes of tensor `name`, checking that it exists and has dtype `want`.
    fn typed(&self, name: &str, want: Dtype) -> Result<&[u8]> {
        let t = self.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.tensors.iter().take(8).map(|t| t.name.as_str()).collect();
            FdsrError::InvalidTensor(format!("no tensor {name:?} in the checkpoint (it has {names:?}…)"))
        })?;
        if t.dtype != want {
            return Err(FdsrError::InvalidTensor(format!("tensor {name:?} is {}, not {want}", t.dtype)));
        }
        Ok(&t.data)
    }
}

impl View for &NamedTensor {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype.to_crate()
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }

    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// `bytes` → tensors, with a message on failure.
fn parse(bytes: &[u8]) -> std::result::Result<SafeTensors, String> {
    let Some(len) = bytes.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)) else {
        return Err(format!("truncated: {} bytes is shorter than the 8-byte header length", bytes.len()));
    };
    if len > MAX_HEADER_LEN {
        return Err(format!("header length {len} is more than the {MAX_HEADER_LEN} bytes allowed"));
    }
    let Some(header) = bytes.get(8..8 + len as usize) else {
        let rest = bytes.len() - 8;
        return Err(format!("truncated: the header needs {len} bytes, the file has {rest} after the length"));
    };
    let data_len = bytes.len() - 8 - header.len();
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| explain(e, header, data_len))?;
    let data = &bytes[8 + header.len()..];
    let mut tensors = Vec::new();
    for (name, info) in meta.tensors() {
        let dtype = Dtype::from_crate(info.dtype).ok_or_else(|| {
            format!("tensor {name:?}: unsupported dtype {:?} (fdsr reads F32, U32, U8, I64)", info.dtype)
        })?;
        let (begin, end) = info.data_offsets;
        // The crate checked that the offsets tile `data` exactly.
        let data = data.get(begin..end).ok_or_else(|| format!("tensor {name:?}: data_offsets out of range"))?;
        tensors.push(NamedTensor { name, dtype, shape: info.shape.clone(), data: data.to_vec() });
    }
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    // The crate keeps the metadata in a map: the order it had in the file is gone.
    let mut metadata: Vec<(String, String)> =
        meta.metadata().iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    metadata.sort();
    Ok(SafeTensors { tensors, metadata })
}

/// The crate's error in this project's words: what is wrong, with the numbers.
fn explain(e: SafeTensorError, header: &[u8], data_len: usize) -> String {
    match e {
        SafeTensorError::MetadataIncompleteBuffer => {
            // The header is valid and its offsets tile a data section of another length.
            let need = serde_json::from_slice::<Metadata>(header).map_or(0, |m| m.data_len());
            if data_len < need {
                format!("truncated: the tensors need {need} data bytes, the file has {data_len} after the header")
            } else {
                format!("{} unexpected bytes after the {need} bytes of tensor data", data_len - need)
            }
        }
        SafeTensorError::InvalidHeaderDeserialization(json) => {
            let text = json.to_string();
            match text.strip_prefix("unknown variant `").and_then(|t| t.split_once('`')) {
                Some((dtype, _)) => format!("header: unsupported dtype {dtype:?} (fdsr reads F32, U32, U8, I64)"),
                None => format!("header: {text}"),
            }
        }
        SafeTensorError::InvalidOffset(name) => {
            format!("tensor {name:?}: data_offsets leave a gap or overlap the previous tensor")
        }
        SafeTensorError::TensorInvalidInfo => {
            "a tensor's data_offsets do not hold the bytes that its dtype and shape need".into()
        }
        SafeTensorError::ValidationOverflow => "a tensor's shape is too large".into(),
        other => format!("header: {other}"),
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::{read_safetensors, write_safetensors};

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::path::Path;

    use super::SafeTensors;
    use crate::error::{FdsrError, Result};

    /// Writes `st` to `path` atomically (temporary file + rename, see [`crate::io::write_atomic`]).
    pub fn write_safetensors(path: impl AsRef<Path>, st: &SafeTensors) -> Result<()> {
        let path = path.as_ref();
        let bytes = st.to_bytes().map_err(|e| FdsrError::InvalidTensor(format!("{}: {e}", path.display())))?;
        crate::io::write_atomic(path, &bytes)
    }

    /// Reads a safetensors file; errors name the path.
    pub fn read_safetensors(path: impl AsRef<Path>) -> Result<SafeTensors> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| FdsrError::Io { path: path.display().to_string(), source })?;
        super::parse(&bytes).map_err(|m| FdsrError::Safetensors(format!("{}: {m}", path.display())))
    }
}
