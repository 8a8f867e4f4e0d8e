//! Host-side bitstream splicing: appends and extracts bit ranges of `u32` word streams (LSB first).

/// Appends the first `nbits` bits of `src` to `dst`, which holds `*len` bits; updates `*len`.
pub fn append_bits(dst: &mut Vec<u32>, len: &mut u64, src: &[u32], nbits: u64) {
    let shift = (*len % 32) as u32;
    dst.truncate(len.div_ceil(32) as usize);
    let words = nbits.div_ceil(32) as usize;
    for (i, &w) in src.iter().take(words).enumerate() {
        let w = if (i + 1) * 32 > nbits as usize { w & low_mask((nbits % 32) as u32) } else { w };
        if shift == 0 {
            dst.push(w);
        } else {
            if let Some(last) = dst.last_mut() {
                *last |= w << shift;
            }
            dst.push(w >> (32 - shift));
        }
    }
    *len += nbits;
    dst.truncate(len.div_ceil(32) as usize);
}

/// The `nbits` bits of `src` starting at bit `start`, as words (missing source bits read as 0).
pub fn extract_bits(src: &[u32], start: u64, nbits: u64) -> Vec<u32> {
    let first = (start / 32) as usize;
    let shift = (start % 32) as u32;
    let words = nbits.div_ceil(32) as usize;
    let get = |i: usize| src.get(i).copied().unwrap_or(0);
    let mut out: Vec<u32> =
        (0..words)
            .map(|i| {
                if shift == 0 {
                    get(first + i)
                } else {
                    (get(first + i) >> shift) | (get(first + i + 1) << (32 - shift))
                }
            })
            .collect();
    if let Some(last) = out.last_mut() {
        if !nbits.is_multiple_of(32) {
            *last &= low_mask((nbits % 32) as u32);
        }
    }
    out
}

fn low_mask(n: u32) -> u32 {
    if n == 0 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// Packs 2-bit values (one per `u32`) 16 to a word, value 0 in the low bits.
pub fn pack2(values: &[u32]) -> Vec<u32> {
    values.chunks(16).map(|c| c.iter().enumerate().fold(0, |w, (i, &v)| w | ((v & 3) << (2 * i)))).collect()
}

/// Unpacks `n` 2-bit values packed by [`pack2`].
pub fn unpack2(words: &[u32], n: usize) -> Vec<u32> {
    (0..n).map(|i| words.get(i / 16).map_or(0, |w| (w >> ((i % 16) * 2)) & 3)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_then_extract_round_trips_at_every_alignment() {
        let mut seed = 12345u32;
        let mut next = || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            seed
        };
        for first in 0..70u64 {
            let a: Vec<u32> = (0..3).map(|_| next()).collect();
            let b: Vec<u32> = (0..4).map(|_| next()).collect();
            let nb = 100 + first % 29;
            let mut dst = Vec::new();
            let mut len = 0;
            append_bits(&mut dst, &mut len, &a, first);
            append_bits(&mut dst, &mut len, &b, nb);
            assert_eq!(len, first + nb);
            assert_eq!(extract_bits(&dst, 0, first), extract_bits(&a, 0, first));
            assert_eq!(extract_bits(&dst, first, nb), extract_bits(&b, 0, nb));
        }
    }

    #[test]
    fn two_bit_packing_round_trips() {
        let v: Vec<u32> = (0..37).map(|i| i % 4).collect();
        assert_eq!(unpack2(&pack2(&v), v.len()), v);
    }
}
