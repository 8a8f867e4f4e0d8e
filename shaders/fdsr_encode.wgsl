// fdsr encoder (docs/CODEC.md): tile analysis with per-group statistics, and the fused
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
// Per tile of the chunk: its STATS statistics (analyze_tiles writes, reduce_stats sums).
@group(0) @binding(8) var<storage, read_write> tile_stats: array<f32>;

// No kernel here uses workgroup memory or barriers: on lavapipe a workgroup reduction through
// shared memory cost more than the whole per-tile analysis.

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

fn tile_nonzero(x: Tile) -> bool {
    return row_nonzero(x.r0) || row_nonzero(x.r1) || row_nonzero(x.r2) || row_nonzero(x.r3) ||
           row_nonzero(x.r4) || row_nonzero(x.r5) || row_nonzero(x.r6) || row_nonzero(x.r7);
}

// Stores DCT coefficients c in raster order.
fn store_coefs(c: Tile, coef: ptr<function, array<f32, 64>>) {
    store_row(coef, 0u, c.r0);
    store_row(coef, 8u, c.r1);
    store_row(coef, 16u, c.r2);
    store_row(coef, 24u, c.r3);
    store_row(coef, 32u, c.r4);
    store_row(coef, 40u, c.r5);
    store_row(coef, 48u, c.r6);
    store_row(coef, 56u, c.r7);
}

// Running sum of squares and max of |.| over a row, in order.
struct SumMax { sum: f32, mx: f32 }

fn sq_step(acc: SumMax, v: f32) -> SumMax { return SumMax(acc.sum + v * v, max(acc.mx, abs(v))); }

fn row_summax(acc0: SumMax, r: Row) -> SumMax {
    var acc = sq_step(acc0, r.a.x);
    acc = sq_step(acc, r.a.y);
    acc = sq_step(acc, r.a.z);
    acc = sq_step(acc, r.a.w);
    acc = sq_step(acc, r.b.x);
    acc = sq_step(acc, r.b.y);
    acc = sq_step(acc, r.b.z);
    return sq_step(acc, r.b.w);
}

// Running per-band statistics over the AC coefficients in zig-zag order (bands are contiguous
// and edges increase strictly, so at most one band ends per step).
struct BandStats { b: u32, end: u32, bmax: f32, energy: f32 }

fn band_flush(st: ptr<function, BandStats>, t: u32) {
    let b = (*st).b;
    tile_stats[t * STATS + b] = f32(edge(b + 1u) - edge(b)) * (*st).bmax * (*st).bmax;
    tile_stats[t * STATS + 8u + b] = (*st).energy;
}

fn band_step(st: ptr<function, BandStats>, z: u32, c: f32, t: u32) {
    if (z == (*st).end) {
        band_flush(st, t);
        (*st).b += 1u;
        (*st).end = edge((*st).b + 1u);
        (*st).bmax = 0.0;
        (*st).energy = 0.0;
    }
    (*st).bmax = max((*st).bmax, abs(c));
    (*st).energy += c * c;
}

// Per-band statistics of the AC coefficients of c into tile t's slots of tile_stats.
fn band_stats(c: Tile, t: u32) {
    var st = BandStats(1u, edge(2u), 0.0, 0.0);
    band_step(&st, 1u, c.r0.a.y, t);
    band_step(&st, 2u, c.r1.a.x, t);
    band_step(&st, 3u, c.r2.a.x, t);
    band_step(&st, 4u, c.r1.a.y, t);
    band_step(&st, 5u, c.r0.a.z, t);
    band_step(&st, 6u, c.r0.a.w, t);
    band_step(&st, 7u, c.r1.a.z, t);
    band_step(&st, 8u, c.r2.a.y, t);
    band_step(&st, 9u, c.r3.a.x, t);
    band_step(&st, 10u, c.r4.a.x, t);
    band_step(&st, 11u, c.r3.a.y, t);
    band_step(&st, 12u, c.r2.a.z, t);
    band_step(&st, 13u, c.r1.a.w, t);
    band_step(&st, 14u, c.r0.b.x, t);
    band_step(&st, 15u, c.r0.b.y, t);
    band_step(&st, 16u, c.r1.b.x, t);
    band_step(&st, 17u, c.r2.a.w, t);
    band_step(&st, 18u, c.r3.a.z, t);
    band_step(&st, 19u, c.r4.a.y, t);
    band_step(&st, 20u, c.r5.a.x, t);
    band_step(&st, 21u, c.r6.a.x, t);
    band_step(&st, 22u, c.r5.a.y, t);
    band_step(&st, 23u, c.r4.a.z, t);
    band_step(&st, 24u, c.r3.a.w, t);
    band_step(&st, 25u, c.r2.b.x, t);
    band_step(&st, 26u, c.r1.b.y, t);
    band_step(&st, 27u, c.r0.b.z, t);
    band_step(&st, 28u, c.r0.b.w, t);
    band_step(&st, 29u, c.r1.b.z, t);
    band_step(&st, 30u, c.r2.b.y, t);
    band_step(&st, 31u, c.r3.b.x, t);
    band_step(&st, 32u, c.r4.a.w, t);
    band_step(&st, 33u, c.r5.a.z, t);
    band_step(&st, 34u, c.r6.a.y, t);
    band_step(&st, 35u, c.r7.a.x, t);
    band_step(&st, 36u, c.r7.a.y, t);
    band_step(&st, 37u, c.r6.a.z, t);
    band_step(&st, 38u, c.r5.a.w, t);
    band_step(&st, 39u, c.r4.b.x, t);
    band_step(&st, 40u, c.r3.b.y, t);
    band_step(&st, 41u, c.r2.b.z, t);
    band_step(&st, 42u, c.r1.b.w, t);
    band_step(&st, 43u, c.r2.b.w, t);
    band_step(&st, 44u, c.r3.b.z, t);
    band_step(&st, 45u, c.r4.b.y, t);
    band_step(&st, 46u, c.r5.b.x, t);
    band_step(&st, 47u, c.r6.a.w, t);
    band_step(&st, 48u, c.r7.a.z, t);
    band_step(&st, 49u, c.r7.a.w, t);
    band_step(&st, 50u, c.r6.b.x, t);
    band_step(&st, 51u, c.r5.b.y, t);
    band_step(&st, 52u, c.r4.b.z, t);
    band_step(&st, 53u, c.r3.b.w, t);
    band_step(&st, 54u, c.r4.b.w, t);
    band_step(&st, 55u, c.r5.b.z, t);
    band_step(&st, 56u, c.r6.b.y, t);
    band_step(&st, 57u, c.r7.b.x, t);
    band_step(&st, 58u, c.r7.b.y, t);
    band_step(&st, 59u, c.r6.b.z, t);
    band_step(&st, 60u, c.r5.b.w, t);
    band_step(&st, 61u, c.r6.b.w, t);
    band_step(&st, 62u, c.r7.b.z, t);
    band_step(&st, 63u, c.r7.b.w, t);
    band_flush(&st, t);
}

// Classifies tile t, records its plane's max |DC| and non-zero count, and writes its statistics.
@compute @workgroup_size(64)
fn analyze_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t >= p.tiles) { return; }
    for (var s = 0u; s < STATS; s++) { tile_stats[t * STATS + s] = 0.0; }
    var cls = 0u;
    let x = load_tile(t);
    if (tile_nonzero(x)) {
        let c = dct_forward(x);
        var sm = row_summax(SumMax(0.0, 0.0), c.r0);
        sm = row_summax(sm, c.r1);
        sm = row_summax(sm, c.r2);
        sm = row_summax(sm, c.r3);
        sm = row_summax(sm, c.r4);
        sm = row_summax(sm, c.r5);
        sm = row_summax(sm, c.r6);
        sm = row_summax(sm, c.r7);
        let total = sm.sum;
        let dc = c.r0.a.x;
        let ac = total - dc * dc;
        cls = select(2u, 1u, ac <= p.dc_threshold * total);
        atomicMax(&plane_dcmax[t / p.tiles_per_plane], bitcast<u32>(abs(dc)));
        atomicAdd(&plane_dcmax[p.planes + t / p.tiles_per_plane], 1u);
        tile_stats[t * STATS + 19u] = sm.mx;
        if (cls == 2u) { band_stats(c, t); }
    }
    classes[t] = cls;
    tile_stats[t * STATS + 16u + cls] = 1.0;
}

// Statistic s of tile l of group g (0 past the last tile).
fn tile_stat(g: u32, l: u32, s: u32) -> f32 {
    let t = g * WG + l;
    return select(0.0, tile_stats[min(t, p.tiles - 1u) * STATS + s], t < p.tiles);
}

// a + b, or max(a, b) for the max statistic.
fn fold(a: f32, b: f32, is_max: bool) -> f32 { return select(a + b, max(a, b), is_max); }

// partials[g * STATS + s]: statistic s summed (the last: max-ed) over group g's 64 tiles by the
// pairwise tree of a 64-wide workgroup reduction (stride 32, 16, ..., 1), without barriers.
@compute @workgroup_size(64)
fn reduce_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    let groups = (p.tiles + WG - 1u) / WG;
    if (i >= groups * STATS) { return; }
    let g = i / STATS;
    let s = i % STATS;
    let m = s == STATS - 1u;
    var a0 = tile_stat(g, 0u, s);
    var a1 = tile_stat(g, 1u, s);
    var a2 = tile_stat(g, 2u, s);
    var a3 = tile_stat(g, 3u, s);
    var a4 = tile_stat(g, 4u, s);
    var a5 = tile_stat(g, 5u, s);
    var a6 = tile_stat(g, 6u, s);
    var a7 = tile_stat(g, 7u, s);
    var a8 = tile_stat(g, 8u, s);
    var a9 = tile_stat(g, 9u, s);
    var a10 = tile_stat(g, 10u, s);
    var a11 = tile_stat(g, 11u, s);
    var a12 = tile_stat(g, 12u, s);
    var a13 = tile_stat(g, 13u, s);
    var a14 = tile_stat(g, 14u, s);
    var a15 = tile_stat(g, 15u, s);
    var a16 = tile_stat(g, 16u, s);
    var a17 = tile_stat(g, 17u, s);
    var a18 = tile_stat(g, 18u, s);
    var a19 = tile_stat(g, 19u, s);
    var a20 = tile_stat(g, 20u, s);
    var a21 = tile_stat(g, 21u, s);
    var a22 = tile_stat(g, 22u, s);
    var a23 = tile_stat(g, 23u, s);
    var a24 = tile_stat(g, 24u, s);
    var a25 = tile_stat(g, 25u, s);
    var a26 = tile_stat(g, 26u, s);
    var a27 = tile_stat(g, 27u, s);
    var a28 = tile_stat(g, 28u, s);
    var a29 = tile_stat(g, 29u, s);
    var a30 = tile_stat(g, 30u, s);
    var a31 = tile_stat(g, 31u, s);
    var a32 = tile_stat(g, 32u, s);
    var a33 = tile_stat(g, 33u, s);
    var a34 = tile_stat(g, 34u, s);
    var a35 = tile_stat(g, 35u, s);
    var a36 = tile_stat(g, 36u, s);
    var a37 = tile_stat(g, 37u, s);
    var a38 = tile_stat(g, 38u, s);
    var a39 = tile_stat(g, 39u, s);
    var a40 = tile_stat(g, 40u, s);
    var a41 = tile_stat(g, 41u, s);
    var a42 = tile_stat(g, 42u, s);
    var a43 = tile_stat(g, 43u, s);
    var a44 = tile_stat(g, 44u, s);
    var a45 = tile_stat(g, 45u, s);
    var a46 = tile_stat(g, 46u, s);
    var a47 = tile_stat(g, 47u, s);
    var a48 = tile_stat(g, 48u, s);
    var a49 = tile_stat(g, 49u, s);
    var a50 = tile_stat(g, 50u, s);
    var a51 = tile_stat(g, 51u, s);
    var a52 = tile_stat(g, 52u, s);
    var a53 = tile_stat(g, 53u, s);
    var a54 = tile_stat(g, 54u, s);
    var a55 = tile_stat(g, 55u, s);
    var a56 = tile_stat(g, 56u, s);
    var a57 = tile_stat(g, 57u, s);
    var a58 = tile_stat(g, 58u, s);
    var a59 = tile_stat(g, 59u, s);
    var a60 = tile_stat(g, 60u, s);
    var a61 = tile_stat(g, 61u, s);
    var a62 = tile_stat(g, 62u, s);
    var a63 = tile_stat(g, 63u, s);
    a0 = fold(a0, a32, m);
    a1 = fold(a1, a33, m);
    a2 = fold(a2, a34, m);
    a3 = fold(a3, a35, m);
    a4 = fold(a4, a36, m);
    a5 = fold(a5, a37, m);
    a6 = fold(a6, a38, m);
    a7 = fold(a7, a39, m);
    a8 = fold(a8, a40, m);
    a9 = fold(a9, a41, m);
    a10 = fold(a10, a42, m);
    a11 = fold(a11, a43, m);
    a12 = fold(a12, a44, m);
    a13 = fold(a13, a45, m);
    a14 = fold(a14, a46, m);
    a15 = fold(a15, a47, m);
    a16 = fold(a16, a48, m);
    a17 = fold(a17, a49, m);
    a18 = fold(a18, a50, m);
    a19 = fold(a19, a51, m);
    a20 = fold(a20, a52, m);
    a21 = fold(a21, a53, m);
    a22 = fold(a22, a54, m);
    a23 = fold(a23, a55, m);
    a24 = fold(a24, a56, m);
    a25 = fold(a25, a57, m);
    a26 = fold(a26, a58, m);
    a27 = fold(a27, a59, m);
    a28 = fold(a28, a60, m);
    a29 = fold(a29, a61, m);
    a30 = fold(a30, a62, m);
    a31 = fold(a31, a63, m);
    a0 = fold(a0, a16, m);
    a1 = fold(a1, a17, m);
    a2 = fold(a2, a18, m);
    a3 = fold(a3, a19, m);
    a4 = fold(a4, a20, m);
    a5 = fold(a5, a21, m);
    a6 = fold(a6, a22, m);
    a7 = fold(a7, a23, m);
    a8 = fold(a8, a24, m);
    a9 = fold(a9, a25, m);
    a10 = fold(a10, a26, m);
    a11 = fold(a11, a27, m);
    a12 = fold(a12, a28, m);
    a13 = fold(a13, a29, m);
    a14 = fold(a14, a30, m);
    a15 = fold(a15, a31, m);
    a0 = fold(a0, a8, m);
    a1 = fold(a1, a9, m);
    a2 = fold(a2, a10, m);
    a3 = fold(a3, a11, m);
    a4 = fold(a4, a12, m);
    a5 = fold(a5, a13, m);
    a6 = fold(a6, a14, m);
    a7 = fold(a7, a15, m);
    a0 = fold(a0, a4, m);
    a1 = fold(a1, a5, m);
    a2 = fold(a2, a6, m);
    a3 = fold(a3, a7, m);
    a0 = fold(a0, a2, m);
    a1 = fold(a1, a3, m);
    a0 = fold(a0, a1, m);
    partials[i] = a0;
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
    // Only full tiles need every coefficient; for DC-only tiles the compiler drops the rest.
    let c = dct_forward(load_tile(t));
    var coef: array<f32, 64>;
    if (cls == 2u) { store_coefs(c, &coef); }
    let dc = c.r0.a.x;
    let stochastic = p.stochastic != 0u;
    let gt = p.tile_base + t;
    // rng24(seed, stream, i) = hash32(key ^ i) >> 8 with the per-tensor part hashed once.
    let key = hash32(hash32(p.seed ^ 0x9e3779b9u) ^ p.stream);
    let start = offsets[t];
    var wr = Writer(start >> 5u, 0u, start & 31u);
    let bdc = band_bits(0u);
    if (bdc == 16u) {
        put(&wr, f16_bits(dc), 16u);
    } else {
        let dcode = encode_scale(bitcast<f32>(atomicLoad(&plane_dcmax[t / p.tiles_per_plane])), p.e0);
        let inv = select(inv_scale(dcode, p.e0), 0.0, dcode == 0u);
        put(&wr, quantize_sym(dc, inv, bdc, hash32(key ^ (gt * 64u)) >> 8u, stochastic), bdc);
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
                let r = hash32(key ^ (gt * 64u + z)) >> 8u;
                put(&wr, quantize_sym(coef[zigzag(z)], inv, bits, r, stochastic), bits);
            }
        }
    }
    flush(&wr);
}
