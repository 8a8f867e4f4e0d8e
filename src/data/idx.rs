//! IDX files (the MNIST container): a 4-byte magic `00 00 TYPE RANK`, `RANK` big-endian `u32`
//! dimensions, then the values in C order. fdsr writes and reads unsigned-byte IDX (type `0x08`):
//! images as `[count, rows, cols]`, labels as `[count]`.
//!
//! The reader checks everything (magic, type, rank, exact length) and never panics on corrupt bytes.

use crate::error::{FdsrError, Result};

/// IDX element type code of unsigned bytes.
pub const IDX_U8: u8 = 0x08;
/// Highest rank accepted by the reader.
const MAX_IDX_RANK: usize = 4;

/// A parsed unsigned-byte IDX array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idx {
    /// Dimensions, slowest first.
    pub dims: Vec<usize>,
    /// `dims.iter().product()` bytes in C order.
    pub data: Vec<u8>,
}

/// Encodes an unsigned-byte IDX array; `data.len()` must equal the product of `dims`.
pub fn encode_idx(dims: &[usize], data: &[u8]) -> Result<Vec<u8>> {
    if dims.is_empty() || dims.len() > MAX_IDX_RANK {
        return Err(FdsrError::InvalidConfig(format!("IDX rank {} is not in 1..={MAX_IDX_RANK}", dims.len())));
    }
    let count = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if count != Some(data.len()) {
        return Err(FdsrError::InvalidConfig(format!("IDX dims {dims:?} do not hold {} bytes", data.len())));
    }
    let mut out = Vec::with_capacity(4 + 4 * dims.len() + data.len());
    out.extend_from_slice(&[0, 0, IDX_U8, dims.len() as u8]);
    for &d in dims {
        let d = u32::try_from(d).map_err(|_| FdsrError::InvalidConfig(format!("IDX dimension {d} exceeds u32")))?;
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    Ok(out)
}

/// Parses an unsigned-byte IDX array; the error message names what is wrong.
pub fn parse_idx(bytes: &[u8]) -> Result<Idx> {
    parse(bytes).map_err(FdsrError::InvalidTensor)
}

/// Parses with a message (without a path) on failure.
pub(crate) fn parse(bytes: &[u8]) -> Result<Idx, String> {
    let Some(&[z0, z1, kind, rank]) = bytes.first_chunk::<4>() else {
        return Err(format!("not an IDX file: {} bytes is shorter than the 4-byte magic", bytes.len()));
    };
    if (z0, z1) != (0, 0) {
        return Err(format!("not an IDX file: magic starts with {z0:02x} {z1:02x}, expected 00 00"));
    }
    if kind != IDX_U8 {
        let name = match kind {
            0x09 => "int8",
            0x0B => "int16",
            0x0C => "int32",
            0x0D => "float32",
            0x0E => "float64",
            _ => "unknown",
        };
        return Err(format!("unsupported IDX element type 0x{kind:02x} ({name}); only unsigned bytes (0x08) are read"));
    }
    let rank = usize::from(rank);
    if rank == 0 || rank > MAX_IDX_RANK {
        return Err(format!("IDX rank {rank} is not in 1..={MAX_IDX_RANK}"));
    }
    let header = 4 + 4 * rank;
    let dim_bytes = bytes.get(4..header).ok_or_else(|| {
        format!("truncated IDX header: rank {rank} needs {header} bytes, the file has {}", bytes.len())
    })?;
    let dims: Vec<usize> =
        dim_bytes.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize).collect();
    let need =
        dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or(format!("IDX dims {dims:?} are too large"))?;
    let body = &bytes[header..];
    if body.len() < need {
        return Err(format!("truncated IDX data: dims {dims:?} need {need} bytes, the file has {}", body.len()));
    }
    if body.len() > need {
        return Err(format!("{} unexpected bytes after the IDX data of dims {dims:?}", body.len() - need));
    }
    Ok(Idx { dims, data: body.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(bytes: &[u8]) -> String {
        parse(bytes).expect_err("corrupt IDX accepted")
    }

    #[test]
    fn round_trip() {
        let data: Vec<u8> = (0..2 * 3 * 4).map(|i| (i * 7) as u8).collect();
        let bytes = encode_idx(&[2, 3, 4], &data).unwrap();
        assert_eq!(&bytes[..8], &[0, 0, 8, 3, 0, 0, 0, 2]);
        assert_eq!(parse_idx(&bytes).unwrap(), Idx { dims: vec![2, 3, 4], data });
        let labels = encode_idx(&[3], &[9, 0, 4]).unwrap();
        assert_eq!(parse_idx(&labels).unwrap().data, vec![9, 0, 4]);
    }

    #[test]
    fn encode_checks_its_input() {
        assert!(encode_idx(&[], &[]).is_err());
        assert!(encode_idx(&[2, 2], &[0; 3]).is_err());
        assert!(encode_idx(&[1, 1, 1, 1, 1], &[0]).is_err());
    }

    #[test]
    fn rejects_corrupt_files() {
        let good = encode_idx(&[2, 2, 2], &[1; 8]).unwrap();
        assert!(err(&good[..3]).contains("shorter than the 4-byte magic"));
        assert!(err(b"\x1f\x8b\x08\x03gzip").contains("not an IDX file"));
        let mut float = good.clone();
        float[2] = 0x0D;
        assert!(err(&float).contains("0x0d (float32)"));
        let mut rank0 = good.clone();
        rank0[3] = 0;
        assert!(err(&rank0).contains("rank 0"));
        let mut rank9 = good.clone();
        rank9[3] = 9;
        assert!(err(&rank9).contains("rank 9"));
        assert!(err(&good[..9]).contains("truncated IDX header"));
        assert!(err(&good[..good.len() - 1]).contains("truncated IDX data"));
        let mut long = good.clone();
        long.push(0);
        assert!(err(&long).contains("unexpected bytes"));
        let mut huge = good[..16].to_vec();
        huge[4..16].copy_from_slice(&[0xff; 12]);
        assert!(!err(&huge).is_empty());
    }
}
