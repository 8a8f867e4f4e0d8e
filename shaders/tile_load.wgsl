// Edge-replicated 8x8 tile loads from `input`, for the shaders that read a tensor's tiles (the fdsr
// encoder and similarity reuse). Each declares `p` with h, w, tiles_x and tiles_per_plane, and
// `input`; prepended after the codec primitives (their Row and Tile).

// Row i of the tile at (y0, x0) of the plane at base, edge-replicated.
fn load_row(base: u32, y0: u32, x0: u32, i: u32) -> Row {
    let row = base + min(y0 + i, p.h - 1u) * p.w;
    let wm = p.w - 1u;
    return Row(vec4<f32>(input[row + min(x0, wm)], input[row + min(x0 + 1u, wm)],
                         input[row + min(x0 + 2u, wm)], input[row + min(x0 + 3u, wm)]),
               vec4<f32>(input[row + min(x0 + 4u, wm)], input[row + min(x0 + 5u, wm)],
                         input[row + min(x0 + 6u, wm)], input[row + min(x0 + 7u, wm)]));
}

// Tile t (edge-replicated).
fn load_tile(t: u32) -> Tile {
    let plane = t / p.tiles_per_plane;
    let r = t % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    let base = plane * p.h * p.w;
    return Tile(load_row(base, y0, x0, 0u), load_row(base, y0, x0, 1u), load_row(base, y0, x0, 2u),
                load_row(base, y0, x0, 3u), load_row(base, y0, x0, 4u), load_row(base, y0, x0, 5u),
                load_row(base, y0, x0, 6u), load_row(base, y0, x0, 7u));
}
