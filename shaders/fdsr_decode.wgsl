// fdsr decoder (docs/CODEC.md) of one segment's device region in one pass: per tile, its bit
// offset from its block's and the class section (shaders/tile_offsets.wgsl); read its codes at that
// offset, dequantize, inverse DCT, write the cropped 8x8 block. A reference tile (class 3) holds
// its representative's index (a non-reference tile of the segment) in 32 bits and decodes that
// tile's payload at its own position. Codes are read through a 64-bit window refilled at fixed
// places (Reader); the default kernel unrolls the zig-zag with the band edges as pipeline
// constants (shaders/bands.wgsl), the compact one loops over it.

struct DecodeParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, nbands: u32, dc_off: u32,
    cls_off: u32, pay_off: u32, blk_off: u32, _p0: u32,
    edges: array<vec4<u32>, 3>,
}

const H_BITS: u32 = 0u;
const H_E0: u32 = 8u;
const H_CLASS_BITS: u32 = 9u;

@group(0) @binding(1) var<uniform> p: DecodeParams;
@group(0) @binding(2) var<storage, read> region: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return region[H_BITS + i]; }
fn class_word(i: u32) -> u32 { return region[p.cls_off + i]; }
fn tile_class(t: u32) -> u32 { return (class_word(t >> 4u) >> ((t & 15u) * 2u)) & 3u; }
fn block_offset(b: u32) -> u32 { return region[p.blk_off + b]; }
fn class_size(c: u32) -> u32 { return region[H_CLASS_BITS + c]; }

fn coef_row(c: ptr<function, array<f32, 64>>, i: u32) -> Row {
    return Row(vec4<f32>((*c)[i], (*c)[i + 1u], (*c)[i + 2u], (*c)[i + 3u]),
               vec4<f32>((*c)[i + 4u], (*c)[i + 5u], (*c)[i + 6u], (*c)[i + 7u]));
}

// Writes row r of a tile to output row y from column x0, cropped to the plane.
fn store_row(base: u32, y: u32, x0: u32, r: Row) {
    if (y >= p.h) { return; }
    let o = base + y * p.w + x0;
    if (x0 + 8u <= p.w) {
        output[o] = r.a.x;
        output[o + 1u] = r.a.y;
        output[o + 2u] = r.a.z;
        output[o + 3u] = r.a.w;
        output[o + 4u] = r.b.x;
        output[o + 5u] = r.b.y;
        output[o + 6u] = r.b.z;
        output[o + 7u] = r.b.w;
        return;
    }
    let n = p.w - x0;
    output[o] = r.a.x;
    if (n > 1u) { output[o + 1u] = r.a.y; }
    if (n > 2u) { output[o + 2u] = r.a.z; }
    if (n > 3u) { output[o + 3u] = r.a.w; }
    if (n > 4u) { output[o + 4u] = r.b.x; }
    if (n > 5u) { output[o + 5u] = r.b.y; }
    if (n > 6u) { output[o + 6u] = r.b.z; }
}

// Bit reader of one invocation: a 64-bit window (`lo`, `hi`, `n` bits) of the tile's stream,
// which starts at phase `s` of payload word `word` (`cur` its value). `refill` appends the next
// 32 bits when fewer than 32 are left; a caller refills at least once per 32 bits taken, so reads
// happen at a few fixed places of the code instead of at every code (see the encoder's writer).
struct Reader { word: u32, s: u32, cur: u32, lo: u32, hi: u32, n: u32 }

fn reader_at(pos: u32) -> Reader {
    let word = p.pay_off + (pos >> 5u);
    var rd = Reader(word, pos & 31u, region[word], 0u, 0u, 0u);
    refill(&rd);
    return rd;
}

fn refill(rd: ptr<function, Reader>) {
    if ((*rd).n < 32u) {
        let s = (*rd).s;
        let next = region[(*rd).word + 1u];
        let f = select(((*rd).cur >> s) | (next << (32u - s)), (*rd).cur, s == 0u);
        (*rd).word += 1u;
        (*rd).cur = next;
        let n = (*rd).n;
        (*rd).lo |= f << n;
        (*rd).hi = select(f >> (32u - n), 0u, n == 0u);
        (*rd).n = n + 32u;
    }
}

// The next nbits (0..=16) of the window.
fn next_bits(rd: ptr<function, Reader>, nbits: u32) -> u32 {
    let v = (*rd).lo & ((1u << nbits) - 1u);
    if (nbits > 0u) {
        (*rd).lo = ((*rd).lo >> nbits) | ((*rd).hi << (32u - nbits));
        (*rd).hi >>= nbits;
        (*rd).n -= nbits;
    }
    return v;
}

// What a full tile's AC codes need: the header's e0, each band's bits and (from the band's scale
// code, read where the band opens) its scale.
struct Bands { e0: i32, bits: array<u32, 8>, scale: array<f32, 8> }

// Coefficient z of a full tile (at most 32 bits over two calls: refill before every second).
fn coef(rd: ptr<function, Reader>, d: ptr<function, Bands>, z: u32) -> f32 {
    let b = band_of(z);
    let bits = (*d).bits[b];
    let f16 = bits == 16u;
    if (z == band_start(b)) {
        let code = next_bits(rd, select(AC_SCALE_BITS, 0u, bits == 0u || f16));
        (*d).scale[b] = select(scale_value(ac_scale_code(code), (*d).e0), 0.0, code == 0u);
    }
    let q = next_bits(rd, bits);
    return select(select(dequant_sym(q, bits, (*d).scale[b]), 0.0, bits == 0u), f16_value(q), f16);
}

// The DC coefficient of a tile of `plane` (the window holds at least 16 bits).
fn dc_read(rd: ptr<function, Reader>, plane: u32, e0: i32) -> f32 {
    let bdc = band_bits(0u);
    let q = next_bits(rd, bdc);
    if (bdc == 16u) { return f16_value(q); }
    let code = (region[p.dc_off + (plane >> 2u)] >> ((plane & 3u) * 8u)) & 0xffu;
    return select(dequant_sym(q, bdc, scale_value(code, e0)), 0.0, code == 0u);
}

// The tile whose payload tile t decodes and its class: t itself, or for a reference (class 3)
// its representative, whose index it holds in 32 bits.
fn resolve(t: u32) -> vec2<u32> {
    let cls = tile_class(t);
    if (cls != 3u) { return vec2<u32>(t, cls); }
    var rd = reader_at(tile_offset(t));
    let low = next_bits(&rd, 16u);
    // The encoder (and the host, for stored bytes) points references at earlier non-references.
    let st = min(low | (next_bits(&rd, 16u) << 16u), t);
    return vec2<u32>(st, select(tile_class(st), 0u, tile_class(st) == 3u));
}

// A DC-only tile of DC coefficient dc.
fn flat_tile(dc: f32) -> Tile {
    let row = Row(vec4<f32>(dc * 0.125), vec4<f32>(dc * 0.125));
    return Tile(row, row, row, row, row, row, row, row);
}

// Writes tile t's values px, cropped to its plane.
fn store_tile(t: u32, px: Tile) {
    let r = t % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    let base = (t / p.tiles_per_plane) * p.h * p.w;
    store_row(base, y0, x0, px.r0);
    store_row(base, y0 + 1u, x0, px.r1);
    store_row(base, y0 + 2u, x0, px.r2);
    store_row(base, y0 + 3u, x0, px.r3);
    store_row(base, y0 + 4u, x0, px.r4);
    store_row(base, y0 + 5u, x0, px.r5);
    store_row(base, y0 + 6u, x0, px.r6);
    store_row(base, y0 + 7u, x0, px.r7);
}

const ZERO_ROW: Row = Row(vec4<f32>(0.0), vec4<f32>(0.0));

// What both decode kernels start a tile with: the class of the payload it decodes (its own or its
// representative's), the header's e0, a reader past that payload's DC code, the DC coefficient
// (0 for a zero tile), and the tile's values unless it is full (zeros, or a DC-only tile's).
struct Start { cls: u32, e0: i32, rd: Reader, dc: f32, px: Tile }

fn start(t: u32) -> Start {
    let e0 = bitcast<i32>(region[H_E0]);
    let sc = resolve(t);
    var rd = reader_at(tile_offset(sc.x));
    var dc = 0.0;
    if (sc.y != 0u) { dc = dc_read(&rd, sc.x / p.tiles_per_plane, e0); }
    var px = Tile(ZERO_ROW, ZERO_ROW, ZERO_ROW, ZERO_ROW, ZERO_ROW, ZERO_ROW, ZERO_ROW, ZERO_ROW);
    if (sc.y == 1u) { px = flat_tile(dc); }
    return Start(sc.y, e0, rd, dc, px);
}

// unpack_tiles with loops instead of its unrolled zig-zag (the same values), for a page that
// builds its pipelines before its first training step (ContextOptions::compact_shaders).
@compute @workgroup_size(64)
fn unpack_tiles_compact(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles) { return; }
    let h = start(t);
    var rd = h.rd;
    var px = h.px;
    if (h.cls == 2u) {
        var coef: array<f32, 64>;
        coef[0] = h.dc;
        for (var b = 1u; b < p.nbands; b++) {
            let bits = band_bits(b);
            if (bits == 0u) { continue; }
            var scale = 0.0;
            if (bits != 16u) {
                refill(&rd);
                let code = next_bits(&rd, AC_SCALE_BITS);
                scale = select(scale_value(ac_scale_code(code), h.e0), 0.0, code == 0u);
            }
            for (var z = edge(b); z < edge(b + 1u); z++) {
                refill(&rd);
                let q = next_bits(&rd, bits);
                coef[zigzag(z)] = select(dequant_sym(q, bits, scale), f16_value(q), bits == 16u);
            }
        }
        px = dct_inverse(Tile(coef_row(&coef, 0u), coef_row(&coef, 8u), coef_row(&coef, 16u), coef_row(&coef, 24u),
                              coef_row(&coef, 32u), coef_row(&coef, 40u), coef_row(&coef, 48u), coef_row(&coef, 56u)));
    }
    store_tile(t, px);
}

// Per tile: its codes in zig-zag order into named coefficients (a refill before every second),
// then the inverse DCT.
@compute @workgroup_size(64)
fn unpack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles) { return; }
    let h = start(t);
    var rd = h.rd;
    var px = h.px;
    if (h.cls == 2u) {
        let z = ZERO_ROW;
        var c = Tile(Row(vec4<f32>(h.dc, 0.0, 0.0, 0.0), vec4<f32>(0.0)), z, z, z, z, z, z, z);
        var d = Bands(h.e0, array<u32, 8>(), array<f32, 8>());
        for (var b = 1u; b < 8u; b++) { d.bits[b] = select(0u, band_bits(b), b < p.nbands); }
        c.r0.a.y = coef(&rd, &d, 1u);
        refill(&rd);
        c.r1.a.x = coef(&rd, &d, 2u);
        c.r2.a.x = coef(&rd, &d, 3u);
        refill(&rd);
        c.r1.a.y = coef(&rd, &d, 4u);
        c.r0.a.z = coef(&rd, &d, 5u);
        refill(&rd);
        c.r0.a.w = coef(&rd, &d, 6u);
        c.r1.a.z = coef(&rd, &d, 7u);
        refill(&rd);
        c.r2.a.y = coef(&rd, &d, 8u);
        c.r3.a.x = coef(&rd, &d, 9u);
        refill(&rd);
        c.r4.a.x = coef(&rd, &d, 10u);
        c.r3.a.y = coef(&rd, &d, 11u);
        refill(&rd);
        c.r2.a.z = coef(&rd, &d, 12u);
        c.r1.a.w = coef(&rd, &d, 13u);
        refill(&rd);
        c.r0.b.x = coef(&rd, &d, 14u);
        c.r0.b.y = coef(&rd, &d, 15u);
        refill(&rd);
        c.r1.b.x = coef(&rd, &d, 16u);
        c.r2.a.w = coef(&rd, &d, 17u);
        refill(&rd);
        c.r3.a.z = coef(&rd, &d, 18u);
        c.r4.a.y = coef(&rd, &d, 19u);
        refill(&rd);
        c.r5.a.x = coef(&rd, &d, 20u);
        c.r6.a.x = coef(&rd, &d, 21u);
        refill(&rd);
        c.r5.a.y = coef(&rd, &d, 22u);
        c.r4.a.z = coef(&rd, &d, 23u);
        refill(&rd);
        c.r3.a.w = coef(&rd, &d, 24u);
        c.r2.b.x = coef(&rd, &d, 25u);
        refill(&rd);
        c.r1.b.y = coef(&rd, &d, 26u);
        c.r0.b.z = coef(&rd, &d, 27u);
        refill(&rd);
        c.r0.b.w = coef(&rd, &d, 28u);
        c.r1.b.z = coef(&rd, &d, 29u);
        refill(&rd);
        c.r2.b.y = coef(&rd, &d, 30u);
        c.r3.b.x = coef(&rd, &d, 31u);
        refill(&rd);
        c.r4.a.w = coef(&rd, &d, 32u);
        c.r5.a.z = coef(&rd, &d, 33u);
        refill(&rd);
        c.r6.a.y = coef(&rd, &d, 34u);
        c.r7.a.x = coef(&rd, &d, 35u);
        refill(&rd);
        c.r7.a.y = coef(&rd, &d, 36u);
        c.r6.a.z = coef(&rd, &d, 37u);
        refill(&rd);
        c.r5.a.w = coef(&rd, &d, 38u);
        c.r4.b.x = coef(&rd, &d, 39u);
        refill(&rd);
        c.r3.b.y = coef(&rd, &d, 40u);
        c.r2.b.z = coef(&rd, &d, 41u);
        refill(&rd);
        c.r1.b.w = coef(&rd, &d, 42u);
        c.r2.b.w = coef(&rd, &d, 43u);
        refill(&rd);
        c.r3.b.z = coef(&rd, &d, 44u);
        c.r4.b.y = coef(&rd, &d, 45u);
        refill(&rd);
        c.r5.b.x = coef(&rd, &d, 46u);
        c.r6.a.w = coef(&rd, &d, 47u);
        refill(&rd);
        c.r7.a.z = coef(&rd, &d, 48u);
        c.r7.a.w = coef(&rd, &d, 49u);
        refill(&rd);
        c.r6.b.x = coef(&rd, &d, 50u);
        c.r5.b.y = coef(&rd, &d, 51u);
        refill(&rd);
        c.r4.b.z = coef(&rd, &d, 52u);
        c.r3.b.w = coef(&rd, &d, 53u);
        refill(&rd);
        c.r4.b.w = coef(&rd, &d, 54u);
        c.r5.b.z = coef(&rd, &d, 55u);
        refill(&rd);
        c.r6.b.y = coef(&rd, &d, 56u);
        c.r7.b.x = coef(&rd, &d, 57u);
        refill(&rd);
        c.r7.b.y = coef(&rd, &d, 58u);
        c.r6.b.z = coef(&rd, &d, 59u);
        refill(&rd);
        c.r5.b.w = coef(&rd, &d, 60u);
        c.r6.b.w = coef(&rd, &d, 61u);
        refill(&rd);
        c.r7.b.z = coef(&rd, &d, 62u);
        c.r7.b.w = coef(&rd, &d, 63u);
        px = dct_inverse(c);
    }
    store_tile(t, px);
}
