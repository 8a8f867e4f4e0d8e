// fdsr decoder (docs/CODEC.md) of one segment's device region: tile sizes from the class section
// (scanned into bit offsets by shaders/scan.wgsl), then per tile: read its codes at its bit
// offset, dequantize, inverse DCT, write the cropped 8x8 block. A reference tile (class 3) holds
// its representative's index (a non-reference tile of the segment) in 32 bits and decodes that
// tile's payload at its own position.

struct DecodeParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, nbands: u32, dc_off: u32,
    cls_off: u32, pay_off: u32, _p0: u32, _p1: u32,
    edges: array<vec4<u32>, 3>,
}

const H_BITS: u32 = 0u;
const H_E0: u32 = 8u;
const H_CLASS_BITS: u32 = 9u;

@group(0) @binding(1) var<uniform> p: DecodeParams;
@group(0) @binding(2) var<storage, read> region: array<u32>;
// Per tile: its size in bits (decode_sizes), then its bit offset (scan).
@group(0) @binding(3) var<storage, read_write> work: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return region[H_BITS + i]; }
fn tile_class(t: u32) -> u32 { return (region[p.cls_off + (t >> 4u)] >> ((t & 15u) * 2u)) & 3u; }

// Reads nbits (1..=16) at bit position *pos of the payload and advances it.
fn take(pos: ptr<function, u32>, nbits: u32) -> u32 {
    let w = p.pay_off + (*pos >> 5u);
    let s = *pos & 31u;
    var v = region[w] >> s;
    if (s + nbits > 32u) { v |= region[w + 1u] << (32u - s); }
    *pos += nbits;
    return v & ((1u << nbits) - 1u);
}

fn dc_value(pos: ptr<function, u32>, plane: u32, e0: i32) -> f32 {
    let bdc = band_bits(0u);
    if (bdc == 16u) { return f16_value(take(pos, 16u)); }
    let q = take(pos, bdc);
    let code = (region[p.dc_off + (plane >> 2u)] >> ((plane & 3u) * 8u)) & 0xffu;
    if (code == 0u) { return 0.0; }
    return dequant_sym(q, bdc, scale_value(code, e0));
}

// work[t] = size in bits of tile t's class.
@compute @workgroup_size(64)
fn decode_sizes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t < p.tiles) { work[t] = region[H_CLASS_BITS + tile_class(t)]; }
}

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

@compute @workgroup_size(64)
fn unpack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles) { return; }
    let e0 = bitcast<i32>(region[H_E0]);
    var st = t;
    var cls = tile_class(t);
    if (cls == 3u) {
        var pos = work[t];
        st = take(&pos, 16u);
        st |= take(&pos, 16u) << 16u;
        // The encoder (and the host, for stored bytes) points references at earlier non-references.
        st = min(st, t);
        cls = select(tile_class(st), 0u, tile_class(st) == 3u);
    }
    let plane = st / p.tiles_per_plane;
    let out_plane = t / p.tiles_per_plane;
    let r = t % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    let zero = Row(vec4<f32>(0.0), vec4<f32>(0.0));
    var px = Tile(zero, zero, zero, zero, zero, zero, zero, zero);
    if (cls == 1u) {
        var pos = work[st];
        let v = dc_value(&pos, plane, e0) * 0.125;
        let row = Row(vec4<f32>(v), vec4<f32>(v));
        px = Tile(row, row, row, row, row, row, row, row);
    } else if (cls == 2u) {
        var pos = work[st];
        var coef: array<f32, 64>;
        coef[0] = dc_value(&pos, plane, e0);
        for (var b = 1u; b < p.nbands; b++) {
            let bits = band_bits(b);
            if (bits == 0u) { continue; }
            if (bits == 16u) {
                for (var z = edge(b); z < edge(b + 1u); z++) { coef[zigzag(z)] = f16_value(take(&pos, 16u)); }
                continue;
            }
            let code = take(&pos, 8u);
            let scale = select(scale_value(code, e0), 0.0, code == 0u);
            for (var z = edge(b); z < edge(b + 1u); z++) {
                coef[zigzag(z)] = dequant_sym(take(&pos, bits), bits, scale);
            }
        }
        px = dct_inverse(Tile(coef_row(&coef, 0u), coef_row(&coef, 8u), coef_row(&coef, 16u), coef_row(&coef, 24u),
                              coef_row(&coef, 32u), coef_row(&coef, 40u), coef_row(&coef, 48u), coef_row(&coef, 56u)));
    }
    let base = out_plane * p.h * p.w;
    store_row(base, y0, x0, px.r0);
    store_row(base, y0 + 1u, x0, px.r1);
    store_row(base, y0 + 2u, x0, px.r2);
    store_row(base, y0 + 3u, x0, px.r3);
    store_row(base, y0 + 4u, x0, px.r4);
    store_row(base, y0 + 5u, x0, px.r5);
    store_row(base, y0 + 6u, x0, px.r6);
    store_row(base, y0 + 7u, x0, px.r7);
}
