// Edge-replicated 8x8 tile loads from `input` and the zig-zag order of a tile, for the shaders that
// read a tensor's tiles (the fdsr encoder and similarity reuse). Each declares `p` with h, w,
// tiles_x and tiles_per_plane, and `input`; prepended after the codec primitives (their Row, Tile
// and zig-zag table).

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

// The 64 coefficients of c (raster rows) in zig-zag order.
fn zigzag_order(c: Tile) -> array<f32, 64> {
    var rows = array<Row, 8>(c.r0, c.r1, c.r2, c.r3, c.r4, c.r5, c.r6, c.r7);
    var raster: array<f32, 64>;
    for (var i = 0u; i < 8u; i++) {
        let q = rows[i];
        raster[i * 8u] = q.a.x;
        raster[i * 8u + 1u] = q.a.y;
        raster[i * 8u + 2u] = q.a.z;
        raster[i * 8u + 3u] = q.a.w;
        raster[i * 8u + 4u] = q.b.x;
        raster[i * 8u + 5u] = q.b.y;
        raster[i * 8u + 6u] = q.b.z;
        raster[i * 8u + 7u] = q.b.w;
    }
    var zz: array<f32, 64>;
    for (var z = 0u; z < 64u; z++) { zz[z] = raster[zigzag(z)]; }
    return zz;
}
