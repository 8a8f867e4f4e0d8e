//! Checkpoints in the safetensors format: an 8-byte little-endian header length `N`, `N` bytes of
//! JSON header, then the tensors' bytes.
//!
//! The header is `{"__metadata__": {"key": "string value", …}, "name": {"dtype": "F32", "shape":
//! [2, 3], "data_offsets": [begin, end]}, …}`, offsets relative to the first byte after the header.
//! [`SafeTensors::to_bytes`] writes tensors sorted by name with contiguous offsets, metadata first in
//! its given order, and pads the header with spaces to a multiple of 8 bytes (like the reference
//! implementation, which sorts by alignment first; readers do not care). [`SafeTensors::from_bytes`]
//! is strict and never panics: the header must be at most [`MAX_HEADER_LEN`] bytes of standard
//! JSON, every tensor entry must have exactly those three keys with a known dtype, and the offsets
//! must tile the data exactly (no gap, no overlap, no trailing byte). Only F32, U32, U8 and I64 are
//! supported. Tensors come back sorted by name, metadata in file order.
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

mod header;
#[cfg(test)]
mod tests;

use std::fmt;

use self::header::Value;
use crate::error::{FdsrError, Result};

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
        let mut json = String::from("{");
        if !self.metadata.is_empty() {
            json.push_str("\"__metadata__\":{");
            for (i, (k, v)) in self.metadata.iter().enumerate() {
                json.push_str(if i == 0 { "" } else { "," });
                header::write_str(&mut json, k);
                json.push(':');
                header::write_str(&mut json, v);
            }
            json.push('}');
        }
        let mut offset = 0usize;
        for (i, t) in order.iter().enumerate() {
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
            json.push_str(if i == 0 && self.metadata.is_empty() { "" } else { "," });
            header::write_str(&mut json, &t.name);
            let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
            let end = offset + t.data.len();
            json.push_str(&format!(
                ":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
                t.dtype,
                shape.join(",")
            ));
            offset = end;
        }
        json.push('}');
        while json.len() % 8 != 0 {
            json.push(' ');
        }
        let mut out = Vec::with_capacity(8 + json.len() + offset);
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(json.as_bytes());
        for t in order {
            out.extend_from_slice(&t.data);
        }
        Ok(out)
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

/// `bytes` → tensors, with a message on failure.
fn parse(bytes: &[u8]) -> std::result::Result<SafeTensors, String> {
    let Some(len) = bytes.first_chunk::<8>().map(|b| u64::from_le_bytes(*b)) else {
        return Err(format!("truncated: {} bytes is shorter than the 8-byte header length", bytes.len()));
    };
    if len > MAX_HEADER_LEN {
        return Err(format!("header length {len} is more than the {MAX_HEADER_LEN} bytes allowed"));
    }
    let rest = bytes.len() - 8;
    let header_end = 8 + len as usize;
    let Some(text) = bytes.get(8..header_end) else {
        return Err(format!("truncated: the header needs {len} bytes, the file has {rest} after the length"));
    };
    if text.first() != Some(&b'{') {
        return Err("the header does not start with '{'".into());
    }
    let Value::Obj(fields) = header::parse(text).map_err(|e| format!("header: {e}"))? else {
        return Err("the header is not a JSON object".into());
    };
    let data = &bytes[header_end..];
    let mut metadata = Vec::new();
    let mut entries: Vec<(NamedTensor, usize, usize)> = Vec::new();
    for (name, value) in fields {
        if name == METADATA_KEY {
            metadata = parse_metadata(value)?;
        } else {
            entries.push(parse_entry(name, value)?);
        }
    }
    entries.sort_by_key(|e| (e.1, e.2));
    let mut at = 0usize;
    for (t, begin, end) in &mut entries {
        if *begin != at {
            let what = if *begin < at { "overlaps the previous tensor" } else { "leaves a gap after the previous one" };
            return Err(format!(
                "tensor {:?}: data_offsets [{begin}, {end}] {what} (expected to begin at {at})",
                t.name
            ));
        }
        if *end < *begin {
            return Err(format!("tensor {:?}: data_offsets [{begin}, {end}] end before they begin", t.name));
        }
        let need = t.expected_len().ok_or_else(|| format!("tensor {:?}: shape {:?} is too large", t.name, t.shape))?;
        if end.checked_sub(*begin) != Some(need) {
            return Err(format!(
                "tensor {:?}: data_offsets [{begin}, {end}] hold {} bytes, but {} {:?} needs {need}",
                t.name,
                *end - *begin,
                t.dtype,
                t.shape
            ));
        }
        let Some(slice) = data.get(*begin..*end) else {
            return Err(format!(
                "truncated: tensor {:?} needs data bytes [{begin}, {end}), the file has {} after the header",
                t.name,
                data.len()
            ));
        };
        t.data = slice.to_vec();
        at = *end;
    }
    if at != data.len() {
        return Err(format!("{} unexpected bytes after the {at} bytes of tensor data", data.len() - at));
    }
    let mut tensors: Vec<NamedTensor> = entries.into_iter().map(|e| e.0).collect();
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(SafeTensors { tensors, metadata })
}

/// `__metadata__`: an object of strings.
fn parse_metadata(value: Value) -> std::result::Result<Vec<(String, String)>, String> {
    let Value::Obj(fields) = value else {
        return Err(format!("{METADATA_KEY} is {}, not an object of strings", value.describe()));
    };
    fields
        .into_iter()
        .map(|(k, v)| match v {
            Value::Str(s) => Ok((k, s)),
            v => Err(format!("{METADATA_KEY} entry {k:?} is {}, not a string", v.describe())),
        })
        .collect()
}

/// One tensor entry: the tensor (without data) and its data offsets.
fn parse_entry(name: String, value: Value) -> std::result::Result<(NamedTensor, usize, usize), String> {
    let fail = |m: String| Err(format!("tensor {name:?}: {m}"));
    let Value::Obj(fields) = value else {
        return fail(format!("the entry is {}, not an object", value.describe()));
    };
    let (mut dtype, mut shape, mut offsets) = (None, None, None);
    for (k, v) in fields {
        match k.as_str() {
            "dtype" => dtype = Some(v),
            "shape" => shape = Some(v),
            "data_offsets" => offsets = Some(v),
            _ => return fail(format!("unknown key {k:?} (expected dtype, shape, data_offsets)")),
        }
    }
    let (Some(dtype), Some(shape), Some(offsets)) = (dtype, shape, offsets) else {
        return fail("the entry needs dtype, shape and data_offsets".into());
    };
    let dtype = match &dtype {
        Value::Str(s) => match Dtype::ALL.into_iter().find(|d| d.name() == s) {
            Some(d) => d,
            None => return fail(format!("unsupported dtype {s:?} (fdsr reads F32, U32, U8, I64)")),
        },
        v => return fail(format!("dtype is {}, not a string", v.describe())),
    };
    let Some(shape) = usizes(&shape) else {
        return fail(format!("shape is {}, not an array of non-negative integers", shape.describe()));
    };
    let (begin, end) = match usizes(&offsets).as_deref() {
        Some(&[b, e]) => (b, e),
        _ => return fail(format!("data_offsets is {}, not [begin, end]", offsets.describe())),
    };
    Ok((NamedTensor { name, dtype, shape, data: Vec::new() }, begin, end))
}

/// An array of non-negative integers that fit in `usize`.
fn usizes(v: &Value) -> Option<Vec<usize>> {
    let Value::Arr(items) = v else { return None };
    items.iter().map(|x| x.as_u64().and_then(|n| usize::try_from(n).ok())).collect()
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
