//! The serialized form of [`Compressed`] (docs/CODEC.md, "Serialized form") and its exact byte
//! accounting.
//!
//! Layout, little-endian: magic `FDSR`, version `u16`, policy tag `u8` (0 lossless, 1 uniform,
//! 2 division, 3 fdsr), rounding `u8` (0 stochastic, 1 nearest), rank `u8`, dims `u64`×rank,
//! seed `u32`, tensor id `u32`; then the policy parameters (uniform: bits `u8`, e0 `i16`;
//! division: e0 `i16`; fdsr: edge count `u8`, edges `u8`×n, bits `u8`×(n−1), e0 `i16`); then the
//! body's sections, each a LEB128 element count followed by the elements:
//! lossless `[data u32]`, uniform `[mins u16, range codes u8, payload u32]`, division
//! `[means u16, mins u16, range codes u8, payload u32]`, fdsr `[classes u32, dc codes u8,
//! refs u32, payload u32]`. Every count is checked against what the shape implies before anything
//! is allocated; trailing bytes are an error.

use crate::error::{FdsrError, Result};
use crate::reference::{self, division, fdsr, uniform};
use crate::rules::config::Rounding;
use crate::rules::format::{Body, Compressed, DivisionBody, FdsrBody, UniformBody, FORMAT_VERSION};
pub use crate::rules::sizes::{fdsr_stored_bytes, header_bytes, section_bytes, uniform_stored_bytes, varint_len};

/// First four bytes of every serialized tensor.
pub const MAGIC: [u8; 4] = *b"FDSR";

fn rounding_tag(r: Rounding) -> u8 {
    match r {
        Rounding::Stochastic => 0,
        Rounding::Nearest => 1,
    }
}

/// e0 as stored (`i16`; out-of-range in-memory values saturate and fail validation on decode).
fn e0_i16(e0: i32) -> i16 {
    e0.clamp(i16::MIN as i32, i16::MAX as i32) as i16
}

impl Compressed {
    /// Bytes of the header and policy parameters.
    fn head_bytes(&self) -> usize {
        header_bytes(self.shape.len())
            + match &self.body {
                Body::Lossless { .. } => 0,
                Body::Uniform(_) => 3,
                Body::Division(_) => 2,
                Body::Fdsr(f) => 1 + f.band_edges.len() + f.bits.len() + 2,
            }
    }

    /// The serialized bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut o = Vec::with_capacity(self.stored_bytes());
        o.extend_from_slice(&MAGIC);
        o.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let tag = match &self.body {
            Body::Lossless { .. } => 0u8,
            Body::Uniform(_) => 1,
            Body::Division(_) => 2,
            Body::Fdsr(_) => 3,
        };
        o.extend_from_slice(&[tag, rounding_tag(self.rounding), self.shape.len() as u8]);
        for &d in &self.shape {
            o.extend_from_slice(&(d as u64).to_le_bytes());
        }
        o.extend_from_slice(&self.seed.to_le_bytes());
        o.extend_from_slice(&self.tensor_id.to_le_bytes());
        match &self.body {
            Body::Lossless { data } => put_u32s(&mut o, data),
            Body::Uniform(u) => {
                o.push(u.bits);
                o.extend_from_slice(&e0_i16(u.e0).to_le_bytes());
                put_u16s(&mut o, &u.mins);
                put_u8s(&mut o, &u.range_codes);
                put_u32s(&mut o, &u.payload);
            }
            Body::Division(d) => {
                o.extend_from_slice(&e0_i16(d.e0).to_le_bytes());
                put_u16s(&mut o, &d.means);
                put_u16s(&mut o, &d.mins);
                put_u8s(&mut o, &d.range_codes);
                put_u32s(&mut o, &d.payload);
            }
            Body::Fdsr(f) => {
                o.push(f.band_edges.len() as u8);
                o.extend_from_slice(&f.band_edges);
                o.extend_from_slice(&f.bits);
                o.extend_from_slice(&e0_i16(f.e0).to_le_bytes());
                put_u32s(&mut o, &f.classes);
                put_u8s(&mut o, &f.dc_codes);
                put_u32s(&mut o, &f.refs);
                put_u32s(&mut o, &f.payload);
            }
        }
        o
    }

    /// Exact length of [`Compressed::to_bytes`], computed without serializing.
    pub fn stored_bytes(&self) -> usize {
        self.bytes_by_part().iter().map(|(_, n)| n).sum()
    }

    /// Compression ratio: fp32 bytes of the tensor over stored bytes.
    pub fn ratio(&self) -> f64 {
        4.0 * self.numel() as f64 / self.stored_bytes() as f64
    }

    /// Stored bytes by part (header and parameters first), summing to [`Compressed::stored_bytes`].
    /// Section count prefixes are counted with their section; `fdsr`'s per-(tile, band) AC scale
    /// codes, which live inside the tile bitstream, are reported apart from its codes.
    pub fn bytes_by_part(&self) -> Vec<(&'static str, usize)> {
        let mut parts = vec![("header", self.head_bytes())];
        match &self.body {
            Body::Lossless { data } => parts.push(("values", section_bytes(data.len(), 4))),
            Body::Uniform(u) => parts.extend([
                ("mins", section_bytes(u.mins.len(), 2)),
                ("ranges", section_bytes(u.range_codes.len(), 1)),
                ("codes", section_bytes(u.payload.len(), 4)),
            ]),
            Body::Division(d) => parts.extend([
                ("means", section_bytes(d.means.len(), 2)),
                ("mins", section_bytes(d.mins.len(), 2)),
                ("ranges", section_bytes(d.range_codes.len(), 1)),
                ("codes", section_bytes(d.payload.len(), 4)),
            ]),
            Body::Fdsr(f) => {
                let payload = section_bytes(f.payload.len(), 4);
                let full =
                    (0..self.fdsr_tiles()).filter(|&t| f.class(t) == crate::rules::format::TileClass::Full).count();
                let scaled = f.bits.iter().skip(1).filter(|&&b| (1..=8).contains(&b)).count();
                let ac_scales = (full * scaled).min(payload);
                parts.extend([
                    ("classes", section_bytes(f.classes.len(), 4)),
                    ("dc_scales", section_bytes(f.dc_codes.len(), 1)),
                    ("refs", section_bytes(f.refs.len(), 4)),
                    ("ac_scales", ac_scales),
                    ("codes", payload - ac_scales),
                ]);
            }
        }
        parts
    }

    /// Tile count implied by the shape (0 unless rank 4), bounded by the stored class words.
    fn fdsr_tiles(&self) -> usize {
        let cap = match &self.body {
            Body::Fdsr(f) => f.classes.len() * 16,
            _ => 0,
        };
        fdsr::Geometry::from_shape(&self.shape).map_or(0, |g| g.tiles().min(cap))
    }

    /// Parses serialized bytes, checking magic, version, every length and the absence of
    /// trailing bytes. Never allocates more than the input's size implies.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        let magic = r.take(4)?;
        if magic != MAGIC {
            return Err(FdsrError::Corrupt(format!("bad magic {magic:02x?}: not an fdsr tensor")));
        }
        let version = r.u16()?;
        if version != FORMAT_VERSION {
            return Err(FdsrError::Corrupt(format!(
                "format version {version} is not supported (this build reads version {FORMAT_VERSION})"
            )));
        }
        let tag = r.u8()?;
        let rounding = match r.u8()? {
            0 => Rounding::Stochastic,
            1 => Rounding::Nearest,
            x => return Err(FdsrError::Corrupt(format!("unknown rounding tag {x}"))),
        };
        let rank = r.u8()? as usize;
        if !(1..=4).contains(&rank) {
            return Err(FdsrError::Corrupt(format!("rank {rank} is not in 1..=4")));
        }
        let mut dims = Vec::with_capacity(rank);
        for _ in 0..rank {
            dims.push(r.u64()?);
        }
        let shape = reference::checked_shape(&dims).map_err(FdsrError::Corrupt)?;
        let numel = shape.iter().product::<usize>();
        let seed = r.u32()?;
        let tensor_id = r.u32()?;
        let body = match tag {
            0 => Body::Lossless { data: r.u32s("values", numel)? },
            1 => {
                let bits = r.u8()?;
                let e0 = r.i16()? as i32;
                uniform::check_params(bits, e0)?;
                let (groups, words) = uniform::lengths(numel as u64, bits);
                let mins = r.u16s("mins", groups)?;
                let range_codes = r.u8s("ranges", groups)?;
                Body::Uniform(UniformBody { bits, e0, mins, range_codes, payload: r.u32s("codes", words)? })
            }
            2 => {
                let e0 = r.i16()? as i32;
                let (blocks, planes, words) = division::lengths(&shape).map_err(FdsrError::Corrupt)?;
                let means = r.u16s("means", blocks)?;
                let mins = r.u16s("mins", planes)?;
                let range_codes = r.u8s("ranges", planes)?;
                Body::Division(DivisionBody { e0, means, mins, range_codes, payload: r.u32s("codes", words)? })
            }
            3 => {
                let n = r.u8()? as usize;
                let band_edges = r.take(n)?.to_vec();
                let bits = r.take(n.saturating_sub(1))?.to_vec();
                let e0 = r.i16()? as i32;
                fdsr::check_params(&band_edges, &bits, e0)?;
                let g = fdsr::Geometry::from_shape(&shape).map_err(FdsrError::Corrupt)?;
                let classes = r.u32s("classes", g.tiles().div_ceil(16))?;
                let dc_codes = r.u8s("dc codes", g.planes)?;
                let mut f = FdsrBody { band_edges, bits, e0, classes, dc_codes, refs: Vec::new(), payload: Vec::new() };
                let (refs, words) = fdsr::expected_lengths(&f, g.tiles());
                f.refs = r.u32s("refs", refs)?;
                f.payload = r.u32s("payload", words)?;
                Body::Fdsr(f)
            }
            x => return Err(FdsrError::Corrupt(format!("unknown policy tag {x}"))),
        };
        r.finish()?;
        Ok(Compressed { shape, seed, tensor_id, rounding, body })
    }
}

fn put_varint(o: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        o.push((x as u8) | 0x80);
        x >>= 7;
    }
    o.push(x as u8);
}

fn put_u8s(o: &mut Vec<u8>, v: &[u8]) {
    put_varint(o, v.len() as u64);
    o.extend_from_slice(v);
}

fn put_u16s(o: &mut Vec<u8>, v: &[u16]) {
    put_varint(o, v.len() as u64);
    v.iter().for_each(|x| o.extend_from_slice(&x.to_le_bytes()));
}

fn put_u32s(o: &mut Vec<u8>, v: &[u32]) {
    put_varint(o, v.len() as u64);
    v.iter().for_each(|x| o.extend_from_slice(&x.to_le_bytes()));
}

/// A cursor over untrusted bytes; every read is bounds-checked.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Self { b, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let left = self.b.len() - self.pos;
        if n > left {
            return Err(FdsrError::Corrupt(format!("truncated: {n} bytes needed at offset {}, {left} left", self.pos)));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A minimal-length LEB128 `u64`.
    fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        let mut x = 0u64;
        for i in 0..10 {
            let byte = self.u8()?;
            let part = (byte & 0x7f) as u64;
            if i == 9 && part > 1 {
                break;
            }
            x |= part << (7 * i);
            if byte & 0x80 == 0 {
                if i > 0 && byte == 0 {
                    break; // not minimal
                }
                return Ok(x);
            }
        }
        Err(FdsrError::Corrupt(format!("malformed length at offset {start}")))
    }

    /// Reads a section's count, checks it equals `expected`, checks the bytes are there, then
    /// returns the raw element bytes.
    fn section(&mut self, name: &str, expected: usize, elem: usize) -> Result<&'a [u8]> {
        let at = self.pos;
        let count = self.varint()?;
        if count != expected as u64 {
            return Err(FdsrError::Corrupt(format!(
                "section '{name}' at offset {at} holds {count} entries where the shape implies {expected}"
            )));
        }
        self.take(expected.saturating_mul(elem))
    }

    fn u8s(&mut self, name: &str, expected: usize) -> Result<Vec<u8>> {
        Ok(self.section(name, expected, 1)?.to_vec())
    }

    fn u16s(&mut self, name: &str, expected: usize) -> Result<Vec<u16>> {
        let s = self.section(name, expected, 2)?;
        Ok(s.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect())
    }

    fn u32s(&mut self, name: &str, expected: usize) -> Result<Vec<u32>> {
        let s = self.section(name, expected, 4)?;
        Ok(s.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }

    fn finish(&self) -> Result<()> {
        if self.pos != self.b.len() {
            return Err(FdsrError::Corrupt(format!(
                "{} trailing bytes after the body (offset {})",
                self.b.len() - self.pos,
                self.pos
            )));
        }
        Ok(())
    }
}
