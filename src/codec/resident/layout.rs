//! Where each part of a device-resident stored form lies in its region, and how large the region
//! is: pure arithmetic on shapes and budgets, shared by the kernels' drivers, the store's
//! accounting and the file path.
//!
//! Every region starts with a [`HEADER_WORDS`]-word header: bits per band at words 0..8, the
//! scale-code base exponent e0 at [`H_E0`], the payload bits of each tile class at
//! [`H_CLASS_BITS`] (fdsr), the payload bits used at [`H_USED`] (fdsr, written on the device),
//! flags at [`H_FLAGS`] and the band count at [`H_NBANDS`].

use crate::codec::config::GROUP_SIZE;
use crate::error::{FdsrError, Result};

/// Words of every region's header.
pub const HEADER_WORDS: u64 = 16;
/// Header word of e0.
pub const H_E0: usize = 8;
/// Header words of the payload bits of tile classes zero, DC-only, full, reference (fdsr).
pub const H_CLASS_BITS: usize = 9;
/// Header word of the payload bits written (fdsr).
pub const H_USED: usize = 13;
/// Header word of the flags ([`FLAG_NO_FIT`], [`FLAG_OUT_OF_RANGE`]).
pub const H_FLAGS: usize = 14;
/// Header word of the number of bands (fdsr).
pub const H_NBANDS: usize = 15;
/// Flag: no choice of bits fitted the region (the least one was used; cannot happen when the
/// region was sized by [`FdsrLayout::for_budget`]).
pub const FLAG_NO_FIT: u32 = 1;
/// Flag (uniform, division): a value was not finite or beyond ±2^120.
pub const FLAG_OUT_OF_RANGE: u32 = 1;
/// Bits of a reference tile's payload on the device: its representative's index.
pub const REFERENCE_BITS: u32 = 32;
/// Words of an fdsr segment's statistics buffer (what the allocation saw and chose).
pub const STAT_WORDS: u64 = 48;
/// Statistics words: tiles zero, DC-only, full; reuse candidates, hits; payload bits used.
pub const STAT_ZERO: usize = 0;
/// See [`STAT_ZERO`].
pub const STAT_DC: usize = 1;
/// See [`STAT_ZERO`].
pub const STAT_FULL: usize = 2;
/// See [`STAT_ZERO`] (the reuse table's two counters are copied here in this order).
pub const STAT_CANDIDATES: usize = 3;
/// See [`STAT_ZERO`].
pub const STAT_HITS: usize = 4;
/// See [`STAT_ZERO`].
pub const STAT_USED: usize = 5;
/// Chosen bits per band (8 words).
pub const STAT_BITS: usize = 6;
/// e0 (i32 bits).
pub const STAT_E0: usize = 14;
/// Estimated error of the choice (f32 bits).
pub const STAT_ERROR: usize = 15;
/// Per band `Σ n·maxabs²` over full tiles (f32 bits, 8 words).
pub const STAT_SUM_N_MAX2: usize = 16;
/// Per band `Σ coef²` over full tiles (f32 bits, 8 words).
pub const STAT_ENERGY: usize = 24;
/// The DC term `Σ_planes nonzero·dcmax²` (f32 bits).
pub const STAT_DC_TERM: usize = 32;
/// Largest |coefficient| (f32 bits).
pub const STAT_GMAX: usize = 33;
/// Flags of the allocation.
pub const STAT_FLAGS: usize = 34;
/// Tiles per block of an fdsr region's block-offset section.
pub const BLOCK_TILES: u64 = 256;
/// Largest segment, in bytes of f32 input: keeps every size in bits within a `u32`.
pub const SEGMENT_MAX_BYTES: u64 = 1 << 28;

/// Words of `n` items of `bits` bits each, packed.
pub fn packed_words(n: u64, bits: u64) -> u64 {
    (n * bits).div_ceil(32)
}

/// Region layout of an fdsr segment of `planes` planes of `tiles` tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdsrLayout {
    /// Planes of the segment.
    pub planes: u64,
    /// Tiles of the segment.
    pub tiles: u64,
    /// Word of the DC codes (4 per word).
    pub dc_off: u64,
    /// Word of the 2-bit classes (16 per word).
    pub cls_off: u64,
    /// Word of the bit offsets of the blocks of [`BLOCK_TILES`] tiles in the bitstream (one
    /// word per block): a tile's offset is its block's plus its block's earlier tiles' sizes,
    /// which the kernels count from the classes.
    pub blk_off: u64,
    /// Word of the tile bitstream.
    pub pay_off: u64,
    /// Words of the whole region.
    pub words: u64,
}

impl FdsrLayout {
    fn with_payload(planes: u64, tiles: u64, payload_words: u64) -> Self {
        let dc_off = HEADER_WORDS;
        let cls_off = dc_off + packed_words(planes, 8);
        let blk_off = cls_off + packed_words(tiles, 2);
        let pay_off = blk_off + tiles.div_ceil(BLOCK_TILES);
        FdsrLayout { planes, tiles, dc_off, cls_off, blk_off, pay_off, words: pay_off + payload_words.max(1) }
    }

    /// The region of `budget` bits per value (metadata included, header not) for `numel` values:
    /// `HEADER_WORDS + ⌈budget·numel / 32⌉` words. Errors when even one DC bit per tile does not
    /// fit, naming the least budget that does.
    pub fn for_budget(planes: u64, tiles: u64, numel: u64, budget: f64) -> Result<Self> {
        let meta = Self::with_payload(planes, tiles, 0).pay_off - HEADER_WORDS;
        let words = (budget * numel as f64 / 32.0).floor().max(0.0) as u64;
        let least = (32 * (meta + tiles.div_ceil(32))) as f64 / numel.max(1) as f64;
        if words < meta || 32 * (words - meta) < tiles {
            return Err(FdsrError::BudgetTooLow { budget, needed: least });
        }
        Ok(Self::with_payload(planes, tiles, words - meta))
    }

    /// The region for fixed bits: room for every tile at the full-tile size `full_bits`.
    pub fn for_fixed(planes: u64, tiles: u64, full_bits: u32) -> Self {
        Self::with_payload(planes, tiles, packed_words(tiles, u64::from(full_bits.max(REFERENCE_BITS))))
    }

    /// Payload bits the region has room for.
    pub fn limit_bits(&self) -> u64 {
        32 * (self.words - self.pay_off)
    }

    /// Bytes used by a payload of `bits` bits (header and metadata included).
    pub fn used_bytes(&self, bits: u64) -> u64 {
        4 * (self.pay_off + bits.div_ceil(32))
    }
}

/// Region layout of a `uniform:B` segment of `n` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniformLayout {
    /// Values.
    pub n: u64,
    /// Groups.
    pub groups: u64,
    /// Bits per code.
    pub bits: u8,
    /// Word of the bf16 minima (2 per word).
    pub mins_off: u64,
    /// Word of the range codes (4 per word).
    pub codes_off: u64,
    /// Word of the payload.
    pub pay_off: u64,
    /// Payload words.
    pub pay_words: u64,
    /// Words of the whole region.
    pub words: u64,
}

impl UniformLayout {
    /// The layout of `n` values at `bits` bits.
    pub fn new(n: u64, bits: u8) -> Self {
        let groups = n.div_ceil(GROUP_SIZE as u64);
        let mins_off = HEADER_WORDS;
        let codes_off = mins_off + packed_words(groups, 16);
        let pay_off = codes_off + packed_words(groups, 8);
        let pay_words = packed_words(n, u64::from(bits));
        UniformLayout { n, groups, bits, mins_off, codes_off, pay_off, pay_words, words: pay_off + pay_words }
    }
}

/// Region layout of a `division` segment of `planes` planes of `h × w`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DivisionLayout {
    /// Planes.
    pub planes: u64,
    /// 8×8 blocks.
    pub blocks: u64,
    /// Values.
    pub n: u64,
    /// Word of the block means (bf16, 2 per word).
    pub means_off: u64,
    /// Word of the residual minima (bf16, 2 per word).
    pub mins_off: u64,
    /// Word of the residual range codes (4 per word).
    pub codes_off: u64,
    /// Word of the 2-bit payload.
    pub pay_off: u64,
    /// Payload words.
    pub pay_words: u64,
    /// Words of the whole region.
    pub words: u64,
}

impl DivisionLayout {
    /// The layout of `planes` planes of `h × w`.
    pub fn new(planes: u64, h: u64, w: u64) -> Self {
        let blocks = planes * h.div_ceil(8) * w.div_ceil(8);
        let n = planes * h * w;
        let means_off = HEADER_WORDS;
        let mins_off = means_off + packed_words(blocks, 16);
        let codes_off = mins_off + packed_words(planes, 16);
        let pay_off = codes_off + packed_words(planes, 8);
        let pay_words = packed_words(n, 2);
        DivisionLayout {
            planes,
            blocks,
            n,
            means_off,
            mins_off,
            codes_off,
            pay_off,
            pay_words,
            words: pay_off + pay_words,
        }
    }
}

/// The least bits an `fdsr` tensor of 4-D `shape` takes on a device binding `max_binding` bytes:
/// per segment its DC codes, classes, block offsets and one DC bit per tile (what a budget must leave room for,
/// headers not counted), and the number of segments.
pub fn fdsr_least_bits(shape: &[usize], max_binding: u64) -> Result<(u64, u64)> {
    let [n, c, h, w] = *shape else {
        return Err(FdsrError::InvalidTensor(format!("the DCT path needs rank 4, got shape {shape:?}")));
    };
    let (planes, tpp) = ((n * c) as u64, (h.div_ceil(8) * w.div_ceil(8)) as u64);
    let segs = segments(planes, (h * w * 4) as u64, max_binding)?;
    let bits = segs
        .iter()
        .map(|&(_, p)| {
            let tiles = p * tpp;
            32 * (packed_words(p, 8) + packed_words(tiles, 2) + tiles.div_ceil(BLOCK_TILES) + tiles.div_ceil(32))
        })
        .sum();
    Ok((bits, segs.len() as u64))
}

/// Splits `items` (planes or groups) of `item_bytes` input bytes each into segments of at most
/// `max_bytes` (and [`SEGMENT_MAX_BYTES`]), as (first, count).
pub fn segments(items: u64, item_bytes: u64, max_bytes: u64) -> Result<Vec<(u64, u64)>> {
    let per = max_bytes.min(SEGMENT_MAX_BYTES) / item_bytes.max(1);
    if per == 0 {
        return Err(FdsrError::InvalidTensor(format!(
            "one plane or group of {item_bytes} bytes exceeds the {} bytes a segment may bind",
            max_bytes.min(SEGMENT_MAX_BYTES)
        )));
    }
    Ok((0..items).step_by(per as usize).map(|f| (f, per.min(items - f))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_regions_hold_the_budget_and_refuse_too_little() {
        // 2 planes of 16x16 (8 tiles, 512 values) at 2 bits: 32 words besides the header.
        let l = FdsrLayout::for_budget(2, 8, 512, 2.0).unwrap();
        assert_eq!((l.dc_off, l.cls_off, l.blk_off, l.pay_off, l.words), (16, 17, 18, 19, 48));
        assert_eq!(l.limit_bits(), 29 * 32);
        assert_eq!(l.used_bytes(33), 4 * (19 + 2));
        match FdsrLayout::for_budget(2, 8, 512, 0.05) {
            Err(FdsrError::BudgetTooLow { needed, .. }) => assert!((needed - 128.0 / 512.0).abs() < 1e-12),
            other => panic!("expected BudgetTooLow, got {other:?}"),
        }
        assert_eq!(FdsrLayout::for_fixed(2, 8, 100).words, 19 + 25);
        // 257 tiles take two block offsets.
        assert_eq!(FdsrLayout::for_fixed(1, 257, 1).pay_off - FdsrLayout::for_fixed(1, 257, 1).blk_off, 2);
    }

    #[test]
    fn flat_layouts_count_every_section() {
        let u = UniformLayout::new(600, 3);
        assert_eq!((u.groups, u.mins_off, u.codes_off, u.pay_off, u.pay_words), (3, 16, 18, 19, 57));
        let d = DivisionLayout::new(3, 10, 9);
        assert_eq!((d.blocks, d.n, d.means_off, d.mins_off, d.codes_off, d.pay_off), (12, 270, 16, 22, 24, 25));
        assert_eq!(d.pay_words, 17);
        assert_eq!(segments(10, 100, 350).unwrap(), vec![(0, 3), (3, 3), (6, 3), (9, 1)]);
        assert!(segments(2, 1000, 500).is_err());
    }
}
