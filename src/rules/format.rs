//! `Compressed`: the stored form of one tensor, policy by policy (see docs/CODEC.md).

use super::config::Rounding;

/// Serialized format version; bumped on any layout change.
pub const FORMAT_VERSION: u16 = 2;
/// Bits of an AC band's scale code in an fdsr full tile's payload (docs/CODEC.md, "AC scale
/// codes"; version 1 stored 8).
pub const AC_SCALE_BITS: u32 = 5;

/// Tile classes of the `fdsr` body, 2 bits each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TileClass {
    /// Every value of the tile is exactly zero; nothing stored.
    Zero = 0,
    /// AC energy under the threshold; only the DC code stored.
    DcOnly = 1,
    /// DC code plus every AC band with bits.
    Full = 2,
    /// A reference to an earlier identical-enough tile (LSH reuse).
    Reference = 3,
}

impl TileClass {
    /// The class of a 2-bit code.
    pub fn from_bits(b: u32) -> Self {
        match b & 3 {
            0 => TileClass::Zero,
            1 => TileClass::DcOnly,
            2 => TileClass::Full,
            _ => TileClass::Reference,
        }
    }
}

/// One compressed tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Compressed {
    /// Original shape (rank 1..=4; rank 4 is NCHW).
    pub shape: Vec<usize>,
    /// RNG seed used for rounding.
    pub seed: u32,
    /// Tensor id (RNG stream).
    pub tensor_id: u32,
    /// Rounding mode used.
    pub rounding: Rounding,
    /// Policy-specific payload.
    pub body: Body,
}

/// Policy-specific stored data.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// f32 bit patterns verbatim.
    Lossless {
        /// One word per value.
        data: Vec<u32>,
    },
    /// Groups of 256 with asymmetric codes (`uniform:B` and the `fdsr` flat path).
    Uniform(UniformBody),
    /// DIVISION-like body.
    Division(DivisionBody),
    /// Block-DCT body.
    Fdsr(FdsrBody),
}

/// Groups of [`super::config::GROUP_SIZE`] values, each with a bf16 floor minimum and a range code.
#[derive(Clone, Debug, PartialEq)]
pub struct UniformBody {
    /// Bits per value (1..=8).
    pub bits: u8,
    /// Base exponent of the scale codes.
    pub e0: i32,
    /// Per-group minimum, bf16 bits.
    pub mins: Vec<u16>,
    /// Per-group range scale code.
    pub range_codes: Vec<u8>,
    /// Packed codes, `bits` per value in element order.
    pub payload: Vec<u32>,
}

/// 8×8 block means in bf16 plus a 2-bit residual with a per-plane range.
#[derive(Clone, Debug, PartialEq)]
pub struct DivisionBody {
    /// Base exponent of the scale codes.
    pub e0: i32,
    /// Per 8×8 block mean, bf16 bits, blocks row-major per plane.
    pub means: Vec<u16>,
    /// Per-plane residual minimum, bf16 bits.
    pub mins: Vec<u16>,
    /// Per-plane residual range scale code.
    pub range_codes: Vec<u8>,
    /// Packed 2-bit residual codes in element order.
    pub payload: Vec<u32>,
}

/// Block-DCT body: tile classes, per-plane DC scales and the tile bitstream.
#[derive(Clone, Debug, PartialEq)]
pub struct FdsrBody {
    /// Zig-zag band edges.
    pub band_edges: Vec<u8>,
    /// Bits per band (0..=8 or 16).
    pub bits: Vec<u8>,
    /// Base exponent of the scale codes.
    pub e0: i32,
    /// 2-bit tile classes, 16 per word, tile 0 in the low bits.
    pub classes: Vec<u32>,
    /// Per-plane DC scale code.
    pub dc_codes: Vec<u8>,
    /// Reuse references: for each class-3 tile in order, the index of the tile it copies.
    pub refs: Vec<u32>,
    /// Tile bitstream (docs/CODEC.md, fdsr step 7).
    pub payload: Vec<u32>,
}

impl FdsrBody {
    /// Class of tile `t`.
    pub fn class(&self, t: usize) -> TileClass {
        TileClass::from_bits(self.classes.get(t / 16).map_or(0, |w| w >> ((t % 16) * 2)))
    }
}

impl Compressed {
    /// Number of values of the original tensor.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    /// Policy name as stored.
    pub fn policy_name(&self) -> String {
        match &self.body {
            Body::Lossless { .. } => "lossless".into(),
            Body::Uniform(u) => format!("uniform:{}", u.bits),
            Body::Division(_) => "division".into(),
            Body::Fdsr(f) => {
                let b: Vec<String> = f.bits.iter().map(u8::to_string).collect();
                format!("fdsr:bits={}", b.join(","))
            }
        }
    }
}
