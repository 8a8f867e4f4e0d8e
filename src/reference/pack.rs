//! LSB-first bit packing into `u32` words (docs/CODEC.md, "Bit packing"): a code of `b` bits at
//! stream position `pos` goes to word `pos >> 5` shifted left by `pos & 31`, its high part into
//! the next word when it straddles.

use crate::error::{FdsrError, Result};

pub use crate::rules::sizes::words_for_bits;

/// Appends codes to a word vector.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    words: Vec<u32>,
    pos: u64,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer with room for `bits` bits.
    pub fn with_capacity(bits: u64) -> Self {
        Self { words: Vec::with_capacity(words_for_bits(bits)), pos: 0 }
    }

    /// Appends the low `bits` bits of `value` (`bits ∈ 0..=32`; higher bits of `value` ignored).
    pub fn write(&mut self, value: u32, bits: u32) {
        debug_assert!(bits <= 32);
        if bits == 0 {
            return;
        }
        let v = if bits == 32 { value } else { value & ((1u32 << bits) - 1) };
        let shift = (self.pos & 31) as u32;
        if shift == 0 {
            self.words.push(v);
        } else {
            if let Some(last) = self.words.last_mut() {
                *last |= v << shift;
            }
            if shift + bits > 32 {
                self.words.push(v >> (32 - shift));
            }
        }
        self.pos += bits as u64;
    }

    /// Bits written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The packed words (the last one zero-padded).
    pub fn finish(self) -> Vec<u32> {
        self.words
    }
}

/// Reads codes from packed words; reading past the end is an error, never a panic.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    words: &'a [u32],
    pos: u64,
}

impl<'a> BitReader<'a> {
    /// A reader at bit 0 of `words`.
    pub fn new(words: &'a [u32]) -> Self {
        Self { words, pos: 0 }
    }

    /// Total bits available.
    pub fn len_bits(&self) -> u64 {
        self.words.len() as u64 * 32
    }

    /// Current bit position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Moves to bit `pos` (checked by the next read).
    pub fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    /// Reads `bits ∈ 0..=32` bits.
    pub fn read(&mut self, bits: u32) -> Result<u32> {
        if bits > 32 {
            return Err(FdsrError::Corrupt(format!("cannot read {bits} bits at once")));
        }
        let end = self.pos.checked_add(bits as u64);
        if end.is_none_or(|e| e > self.len_bits()) {
            return Err(FdsrError::Corrupt(format!(
                "bitstream ends at bit {} but {bits} bits were requested at bit {}",
                self.len_bits(),
                self.pos
            )));
        }
        if bits == 0 {
            return Ok(0);
        }
        let w = (self.pos >> 5) as usize;
        let shift = (self.pos & 31) as u32;
        let mut v = self.words[w] >> shift;
        if shift + bits > 32 {
            v |= self.words[w + 1] << (32 - shift);
        }
        self.pos += bits as u64;
        Ok(if bits == 32 { v } else { v & ((1u32 << bits) - 1) })
    }
}

/// Packs 2-bit values, 16 per word, value 0 in the low bits (the tile-class layout).
pub fn pack2(values: &[u8]) -> Vec<u32> {
    let mut w = BitWriter::with_capacity(values.len() as u64 * 2);
    for &v in values {
        w.write(v as u32, 2);
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::quant::hash;

    #[test]
    fn round_trip_mixed_widths() {
        let widths = [1u32, 2, 3, 5, 8, 16, 32, 7, 0, 31, 4];
        let mut w = BitWriter::new();
        let mut expect = Vec::new();
        for i in 0..500u32 {
            let b = widths[i as usize % widths.len()];
            let v = hash(i);
            w.write(v, b);
            expect.push((
                b,
                if b == 32 {
                    v
                } else if b == 0 {
                    0
                } else {
                    v & ((1 << b) - 1)
                },
            ));
        }
        let total = w.position();
        let words = w.finish();
        assert_eq!(words.len(), words_for_bits(total));
        let mut r = BitReader::new(&words);
        for (b, v) in expect {
            assert_eq!(r.read(b).unwrap(), v);
        }
        assert_eq!(r.position(), total);
    }

    #[test]
    fn layout_is_lsb_first_and_straddles() {
        let mut w = BitWriter::new();
        w.write(0b101, 3);
        w.write(0xffff_ffff, 30); // bits 3..33: straddles into word 1
        let words = w.finish();
        assert_eq!(words, vec![0xffff_fffd, 0x1]);
        assert_eq!(pack2(&[1, 2, 3]), vec![0b11_10_01]);
    }

    #[test]
    fn reading_past_the_end_is_an_error() {
        let words = [0xdead_beefu32];
        let mut r = BitReader::new(&words);
        assert!(r.read(20).is_ok());
        assert!(r.read(13).is_err());
        assert!(r.read(12).is_ok());
        assert!(r.read(1).is_err());
        assert!(r.read(33).is_err());
        r.seek(u64::MAX - 3);
        assert!(r.read(8).is_err());
        assert!(BitReader::new(&[]).read(1).is_err());
        assert_eq!(BitReader::new(&[]).read(0).unwrap(), 0);
    }
}
