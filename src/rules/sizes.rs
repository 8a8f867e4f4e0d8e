//! Exact sizes of the serialized form (docs/CODEC.md, "Serialized form"): the header, LEB128
//! section counts and each policy's sections, so that a stored size is known without building it.

use super::config::GROUP_SIZE;

/// Number of `u32` words that hold `bits` bits.
pub fn words_for_bits(bits: u64) -> usize {
    bits.div_ceil(32) as usize
}

/// Group count and payload words of `numel` values at `bits` bits (`uniform` and the flat path).
pub fn uniform_lengths(numel: u64, bits: u8) -> (usize, usize) {
    (numel.div_ceil(GROUP_SIZE as u64) as usize, words_for_bits(numel * bits as u64))
}

/// Bytes of the common header for a tensor of rank `rank`.
pub fn header_bytes(rank: usize) -> usize {
    4 + 2 + 1 + 1 + 1 + 8 * rank + 4 + 4
}

/// Bytes of the LEB128 encoding of `x`.
pub fn varint_len(x: u64) -> usize {
    (64 - (x | 1).leading_zeros() as usize).div_ceil(7)
}

/// Bytes of a section of `count` elements of `elem` bytes each, count prefix included.
pub fn section_bytes(count: usize, elem: usize) -> usize {
    varint_len(count as u64) + count * elem
}

/// Exact serialized size of a `uniform` body of `numel` values at `bits` bits, header included.
pub fn uniform_stored_bytes(rank: usize, numel: usize, bits: u8) -> usize {
    let (groups, words) = uniform_lengths(numel as u64, bits);
    header_bytes(rank) + 3 + section_bytes(groups, 2) + section_bytes(groups, 1) + section_bytes(words, 4)
}

/// Exact serialized size of an `fdsr` body, header included.
pub fn fdsr_stored_bytes(
    rank: usize,
    n_edges: usize,
    tiles: usize,
    planes: usize,
    refs: usize,
    payload_words: usize,
) -> usize {
    header_bytes(rank)
        + 1
        + n_edges
        + n_edges.saturating_sub(1)
        + 2
        + section_bytes(tiles.div_ceil(16), 4)
        + section_bytes(planes, 1)
        + section_bytes(refs, 4)
        + section_bytes(payload_words, 4)
}
