// The fdsr band edges 2..8 as pipeline constants (64 past the last band), so that the band of a
// zig-zag index written as a literal folds to a constant and per-band values stay in registers.
// Prepended to the fdsr encoder (before shaders/fdsr_tiles.wgsl) and decoder.
override EDGE2: u32 = 64u;
override EDGE3: u32 = 64u;
override EDGE4: u32 = 64u;
override EDGE5: u32 = 64u;
override EDGE6: u32 = 64u;
override EDGE7: u32 = 64u;
override EDGE8: u32 = 64u;

// Band of zig-zag index z >= 1 (band 0 is the DC alone).
fn band_of(z: u32) -> u32 {
    return 1u + u32(z >= EDGE2) + u32(z >= EDGE3) + u32(z >= EDGE4) + u32(z >= EDGE5) + u32(z >= EDGE6) +
           u32(z >= EDGE7) + u32(z >= EDGE8);
}

// First zig-zag index of band b >= 1.
fn band_start(b: u32) -> u32 {
    return select(select(select(select(select(select(select(EDGE8, EDGE7, b == 7u), EDGE6, b == 6u), EDGE5, b == 5u),
                                       EDGE4, b == 4u), EDGE3, b == 3u), EDGE2, b == 2u), 1u, b == 1u);
}
