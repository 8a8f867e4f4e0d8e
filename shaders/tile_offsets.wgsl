// The bit offsets of an fdsr segment's tiles, which the encoder's pack and the decoder share (a
// tile's size depends only on its class, and a zero tile takes no bits). The region holds the
// offset of each block of 256 tiles (the encoder's finish_segment scans the blocks' sizes into
// them); a tile's offset is its block's plus the sizes of the block's earlier tiles, counted from
// the 2-bit classes 16 at a time. Prepended to both; each declares `class_size(c)`,
// `class_word(i)` (word i of the class section) and `block_offset(b)`.

// The payload bits of the 16 tiles of class word `word` (sizes `s` of classes 1, 2 and 3).
fn word_bits(word: u32, s: vec3<u32>) -> u32 {
    let lo = word & 0x55555555u;
    let hi = (word >> 1u) & 0x55555555u;
    return s.x * countOneBits(lo & ~hi) + s.y * countOneBits(hi & ~lo) + s.z * countOneBits(lo & hi);
}

// The payload sizes of classes 1, 2 and 3.
fn class_sizes() -> vec3<u32> { return vec3<u32>(class_size(1u), class_size(2u), class_size(3u)); }

// Tile t's bit offset in the payload.
fn tile_offset(t: u32) -> u32 {
    let s = class_sizes();
    var off = block_offset(t >> 8u);
    let w = t >> 4u;
    for (var i = (t >> 8u) * 16u; i < w; i++) { off += word_bits(class_word(i), s); }
    // The earlier tiles of t's own word; the mask leaves the others class 0, which takes no bits.
    return off + word_bits(class_word(w) & ((1u << (2u * (t & 15u))) - 1u), s);
}
