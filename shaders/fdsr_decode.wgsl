// fdsr decoder (docs/CODEC.md): per tile, read its codes at its bit offset, dequantize, inverse
// DCT, write the cropped 8x8 block. One invocation per tile.

struct DecodeParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, nbands: u32, e0: i32,
    edges: array<vec4<u32>, 3>,
    bits: array<vec4<u32>, 2>,
}

@group(0) @binding(1) var<uniform> p: DecodeParams;
@group(0) @binding(2) var<storage, read> classes: array<u32>;
@group(0) @binding(3) var<storage, read> dc_codes: array<u32>;
@group(0) @binding(4) var<storage, read> offsets: array<u32>;
@group(0) @binding(5) var<storage, read> payload: array<u32>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return p.bits[i >> 2u][i & 3u]; }

// Reads nbits (1..=16) at bit position *pos and advances it.
fn take(pos: ptr<function, u32>, nbits: u32) -> u32 {
    let w = *pos >> 5u;
    let s = *pos & 31u;
    var v = payload[w] >> s;
    if (s + nbits > 32u) { v |= payload[w + 1u] << (32u - s); }
    *pos += nbits;
    return v & ((1u << nbits) - 1u);
}

fn dc_value(pos: ptr<function, u32>, plane: u32) -> f32 {
    let bdc = band_bits(0u);
    if (bdc == 16u) { return f16_value(take(pos, 16u)); }
    let q = take(pos, bdc);
    let code = dc_codes[plane];
    if (code == 0u) { return 0.0; }
    return dequant_sym(q, bdc, scale_value(code, p.e0));
}

@compute @workgroup_size(64)
fn unpack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles) { return; }
    let cls = classes[t];
    let plane = t / p.tiles_per_plane;
    let r = t % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    var px: array<f32, 64>;
    if (cls == 1u) {
        var pos = offsets[t];
        let v = dc_value(&pos, plane) * 0.125;
        for (var i = 0u; i < 64u; i++) { px[i] = v; }
    } else if (cls == 2u) {
        var pos = offsets[t];
        var coef: array<f32, 64>;
        coef[0] = dc_value(&pos, plane);
        for (var b = 1u; b < p.nbands; b++) {
            let bits = band_bits(b);
            if (bits == 0u) { continue; }
            if (bits == 16u) {
                for (var z = edge(b); z < edge(b + 1u); z++) { coef[zigzag(z)] = f16_value(take(&pos, 16u)); }
                continue;
            }
            let code = take(&pos, 8u);
            let scale = select(scale_value(code, p.e0), 0.0, code == 0u);
            for (var z = edge(b); z < edge(b + 1u); z++) {
                coef[zigzag(z)] = dequant_sym(take(&pos, bits), bits, scale);
            }
        }
        // Inverse: tmp[r][v] = sum_u B[u][r] coef[u][v]; px[r][c] = sum_v tmp[r][v] B[v][c]
        var tmp: array<f32, 64>;
        for (var i = 0u; i < 8u; i++) {
            for (var v = 0u; v < 8u; v++) {
                var acc = 0.0;
                for (var u = 0u; u < 8u; u++) { acc += basis(u * 8u + i) * coef[u * 8u + v]; }
                tmp[i * 8u + v] = acc;
            }
        }
        for (var i = 0u; i < 8u; i++) {
            for (var c = 0u; c < 8u; c++) {
                var acc = 0.0;
                for (var v = 0u; v < 8u; v++) { acc += tmp[i * 8u + v] * basis(v * 8u + c); }
                px[i * 8u + c] = acc;
            }
        }
    }
    let base = plane * p.h * p.w;
    for (var i = 0u; i < 8u; i++) {
        let y = y0 + i;
        if (y >= p.h) { break; }
        for (var j = 0u; j < 8u; j++) {
            let x = x0 + j;
            if (x >= p.w) { break; }
            output[base + y * p.w + x] = px[i * 8u + j];
        }
    }
}
