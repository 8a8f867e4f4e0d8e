// fdsr encoder (docs/CODEC.md): tile analysis with workgroup statistics, and the fused
// DCT + quantize + pack kernel. One invocation per 8x8 tile.

struct FdsrParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, tile_base: u32, nbands: u32,
    seed: u32, stream: u32, stochastic: u32, e0: i32,
    dc_threshold: f32, _p0: u32, _p1: u32, _p2: u32,
    edges: array<vec4<u32>, 3>,
    bits: array<vec4<u32>, 2>,
    class_bits: vec4<u32>,
}

const STATS: u32 = 20u; // per workgroup: 8 x sum(n*max^2), 8 x sum(coef^2), zero, dc-only, full, max
const WG: u32 = 64u;

@group(0) @binding(1) var<uniform> p: FdsrParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
@group(0) @binding(3) var<storage, read_write> classes: array<u32>;
// Per plane of the chunk: the bits of max |DC|, then (at planes + plane) the non-zero tile count.
@group(0) @binding(4) var<storage, read_write> plane_dcmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;
@group(0) @binding(6) var<storage, read> offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> payload: array<atomic<u32>>;

var<workgroup> red: array<f32, 1280>; // WG * STATS

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return p.bits[i >> 2u][i & 3u]; }

// Row i of the tile at (y0, x0) of the plane at base, edge-replicated.
fn load_row(base: u32, y0: u32, x0: u32, i: u32) -> Row {
    let row = base + min(y0 + i, p.h - 1u) * p.w;
    let wm = p.w - 1u;
    return Row(vec4<f32>(input[row + min(x0, wm)], input[row + min(x0 + 1u, wm)],
                         input[row + min(x0 + 2u, wm)], input[row + min(x0 + 3u, wm)]),
               vec4<f32>(input[row + min(x0 + 4u, wm)], input[row + min(x0 + 5u, wm)],
                         input[row + min(x0 + 6u, wm)], input[row + min(x0 + 7u, wm)]));
}

fn row_nonzero(r: Row) -> bool { return any(r.a != vec4<f32>(0.0)) || any(r.b != vec4<f32>(0.0)); }

fn store_row(coef: ptr<function, array<f32, 64>>, i: u32, r: Row) {
    (*coef)[i] = r.a.x;
    (*coef)[i + 1u] = r.a.y;
    (*coef)[i + 2u] = r.a.z;
    (*coef)[i + 3u] = r.a.w;
    (*coef)[i + 4u] = r.b.x;
    (*coef)[i + 5u] = r.b.y;
    (*coef)[i + 6u] = r.b.z;
    (*coef)[i + 7u] = r.b.w;
}

// Loads tile t (edge-replicated) and returns its DCT coefficients in raster order; `nonzero`
// reports whether any pixel is non-zero.
fn load_dct(t: u32, coef: ptr<function, array<f32, 64>>) -> bool {
    let plane = t / p.tiles_per_plane;
    let r = t % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    let base = plane * p.h * p.w;
    let x = Tile(load_row(base, y0, x0, 0u), load_row(base, y0, x0, 1u), load_row(base, y0, x0, 2u),
                 load_row(base, y0, x0, 3u), load_row(base, y0, x0, 4u), load_row(base, y0, x0, 5u),
                 load_row(base, y0, x0, 6u), load_row(base, y0, x0, 7u));
    let nz = row_nonzero(x.r0) || row_nonzero(x.r1) || row_nonzero(x.r2) || row_nonzero(x.r3) ||
             row_nonzero(x.r4) || row_nonzero(x.r5) || row_nonzero(x.r6) || row_nonzero(x.r7);
    let c = dct_forward(x);
    store_row(coef, 0u, c.r0);
    store_row(coef, 8u, c.r1);
    store_row(coef, 16u, c.r2);
    store_row(coef, 24u, c.r3);
    store_row(coef, 32u, c.r4);
    store_row(coef, 40u, c.r5);
    store_row(coef, 48u, c.r6);
    store_row(coef, 56u, c.r7);
    return nz;
}

@compute @workgroup_size(64)
fn analyze_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let gid = group_index(wg, nwg);
    let t = gid * WG + lid;
    for (var s = 0u; s < STATS; s++) { red[lid * STATS + s] = 0.0; }
    if (t < p.tiles) {
        var coef: array<f32, 64>;
        var cls = 0u;
        if (load_dct(t, &coef)) {
            var total = 0.0;
            var tmax = 0.0;
            for (var i = 0u; i < 64u; i++) {
                total += coef[i] * coef[i];
                tmax = max(tmax, abs(coef[i]));
            }
            let dc = coef[0];
            let ac = total - dc * dc;
            cls = select(2u, 1u, ac <= p.dc_threshold * total);
            atomicMax(&plane_dcmax[t / p.tiles_per_plane], bitcast<u32>(abs(dc)));
            atomicAdd(&plane_dcmax[p.planes + t / p.tiles_per_plane], 1u);
            red[lid * STATS + 19u] = tmax;
            if (cls == 2u) {
                for (var b = 1u; b < p.nbands; b++) {
                    var bmax = 0.0;
                    var energy = 0.0;
                    for (var z = edge(b); z < edge(b + 1u); z++) {
                        let c = coef[zigzag(z)];
                        bmax = max(bmax, abs(c));
                        energy += c * c;
                    }
                    red[lid * STATS + b] = f32(edge(b + 1u) - edge(b)) * bmax * bmax;
                    red[lid * STATS + 8u + b] = energy;
                }
            }
        }
        classes[t] = cls;
        red[lid * STATS + 16u + cls] = 1.0;
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            for (var s = 0u; s < 19u; s++) {
                red[lid * STATS + s] += red[(lid + stride) * STATS + s];
            }
            red[lid * STATS + 19u] = max(red[lid * STATS + 19u], red[(lid + stride) * STATS + 19u]);
        }
        workgroupBarrier();
    }
    if (lid < STATS) {
        partials[gid * STATS + lid] = red[lid];
    }
}

// Bit writer of one invocation: word index, pending bits, their count. Whole words are OR-ed in
// (neighbouring tiles share boundary words). nbits is 1..=16.
struct Writer { word: u32, acc: u32, n: u32 }

fn put(wr: ptr<function, Writer>, value: u32, nbits: u32) {
    let v = value & ((1u << nbits) - 1u);
    (*wr).acc |= v << (*wr).n;
    let room = 32u - (*wr).n;
    if (nbits >= room) {
        atomicOr(&payload[(*wr).word], (*wr).acc);
        (*wr).word += 1u;
        (*wr).acc = select(v >> room, 0u, room == 32u);
        (*wr).n = nbits - room;
    } else {
        (*wr).n += nbits;
    }
}

fn flush(wr: ptr<function, Writer>) {
    if ((*wr).n > 0u) { atomicOr(&payload[(*wr).word], (*wr).acc); }
}

@compute @workgroup_size(64)
fn pack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t >= p.tiles) { return; }
    let cls = classes[t];
    if (cls == 0u || cls == 3u) { return; }
    var coef: array<f32, 64>;
    load_dct(t, &coef);
    let stochastic = p.stochastic != 0u;
    let gt = p.tile_base + t;
    let start = offsets[t];
    var wr = Writer(start >> 5u, 0u, start & 31u);
    let bdc = band_bits(0u);
    if (bdc == 16u) {
        put(&wr, f16_bits(coef[0]), 16u);
    } else {
        let dcode = encode_scale(bitcast<f32>(atomicLoad(&plane_dcmax[t / p.tiles_per_plane])), p.e0);
        let inv = select(inv_scale(dcode, p.e0), 0.0, dcode == 0u);
        put(&wr, quantize_sym(coef[0], inv, bdc, rng24(p.seed, p.stream, gt * 64u), stochastic), bdc);
    }
    if (cls == 2u) {
        for (var b = 1u; b < p.nbands; b++) {
            let bits = band_bits(b);
            if (bits == 0u) { continue; }
            if (bits == 16u) {
                for (var z = edge(b); z < edge(b + 1u); z++) { put(&wr, f16_bits(coef[zigzag(z)]), 16u); }
                continue;
            }
            var bmax = 0.0;
            for (var z = edge(b); z < edge(b + 1u); z++) { bmax = max(bmax, abs(coef[zigzag(z)])); }
            let code = encode_scale(bmax, p.e0);
            put(&wr, code, 8u);
            let inv = select(inv_scale(code, p.e0), 0.0, code == 0u);
            for (var z = edge(b); z < edge(b + 1u); z++) {
                let r = rng24(p.seed, p.stream, gt * 64u + z);
                put(&wr, quantize_sym(coef[zigzag(z)], inv, bits, r, stochastic), bits);
            }
        }
    }
    flush(&wr);
}
