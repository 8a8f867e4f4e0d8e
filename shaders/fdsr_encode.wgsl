// fdsr encoder (docs/CODEC.md) of one segment (whole planes) into its device region: tile
// analysis with per-workgroup statistics, the class and DC-code sections, tile sizes, and the
// fused DCT + quantize + pack kernel. The bits, e0 and class sizes come from the region's header
// (written by shaders/fdsr_alloc.wgsl on the device, or by the host on the file path).
//
// Region words: header (src/codec/resident/layout.rs), DC codes (4 per word), 2-bit classes
// (16 per word), the tile bitstream. One invocation per 8x8 tile unless said otherwise.

struct FdsrParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, tile_base: u32, nbands: u32,
    seed: u32, stream: u32, stochastic: u32, dc_threshold: f32,
    dc_off: u32, cls_off: u32, pay_off: u32, _p0: u32,
    edges: array<vec4<u32>, 3>,
}

const STATS: u32 = 20u; // per workgroup: 8 x sum(n*max^2), 8 x sum(coef^2), zero, dc-only, full, max
const WG: u32 = 64u;
const H_BITS: u32 = 0u;
const H_E0: u32 = 8u;
const H_CLASS_BITS: u32 = 9u;

@group(0) @binding(1) var<uniform> p: FdsrParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per tile: its class (analyze_tiles), then its size in bits (tile_sizes), then its bit offset (scan).
@group(0) @binding(3) var<storage, read_write> work: array<u32>;
// Per plane of the segment: the bits of max |DC|, then (at planes + plane) the non-zero tile count.
@group(0) @binding(4) var<storage, read_write> plane_dcmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;
@group(0) @binding(6) var<storage, read_write> region: array<atomic<u32>>;
// Reuse state per tile (shaders/fdsr_reuse.wgsl): the representative of a reference at 3t + 2.
@group(0) @binding(7) var<storage, read> tile_state: array<u32>;

// Per-tile statistics of a workgroup, statistic s of invocation l at s * WG + l.
var<workgroup> red: array<f32, 1280>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return atomicLoad(&region[H_BITS + i]); }
fn header_e0() -> i32 { return bitcast<i32>(atomicLoad(&region[H_E0])); }
fn class_size(c: u32) -> u32 { return atomicLoad(&region[H_CLASS_BITS + (c & 3u)]); }
fn tile_class(t: u32) -> u32 { return (atomicLoad(&region[p.cls_off + (t >> 4u)]) >> ((t & 15u) * 2u)) & 3u; }
fn dc_code(plane: u32) -> u32 { return (atomicLoad(&region[p.dc_off + (plane >> 2u)]) >> ((plane & 3u) * 8u)) & 0xffu; }

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

fn band_flush(st: ptr<function, BandStats>, l: u32) {
    let b = (*st).b;
    red[b * WG + l] = f32(edge(b + 1u) - edge(b)) * (*st).bmax * (*st).bmax;
    red[(8u + b) * WG + l] = (*st).energy;
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

// Per-band statistics of the AC coefficients of c into invocation t's slots of red.
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

// a + b, or max(a, b) for the max statistic.
fn fold(a: f32, b: f32, is_max: bool) -> f32 { return select(a + b, max(a, b), is_max); }

// Classifies tile t into work[t], records its plane's max |DC| and non-zero count, and sums the
// workgroup's statistics into partials[group * STATS + s], tiles in order (the last statistic
// max-ed).
@compute @workgroup_size(64)
fn analyze_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wg, nwg);
    let t = g * WG + lid;
    for (var s = 0u; s < STATS; s++) { red[s * WG + lid] = 0.0; }
    if (t < p.tiles) {
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
            red[19u * WG + lid] = sm.mx;
            if (cls == 2u) { band_stats(c, lid); }
        }
        work[t] = cls;
        red[(16u + cls) * WG + lid] = 1.0;
    }
    workgroupBarrier();
    // One lane per statistic folds the workgroup's 64 tiles in order: one barrier, not a tree's six.
    if (lid < STATS && g * WG < p.tiles) {
        var acc = red[lid * WG];
        for (var l = 1u; l < WG; l++) { acc = fold(acc, red[lid * WG + l], lid == STATS - 1u); }
        partials[g * STATS + lid] = acc;
    }
}

// The yardstick of `fdsr bench codec`: reads every tile as analyze_tiles and pack_tiles do and
// writes one word per tile, the least any pass over the segment's tiles costs on a device.
@compute @workgroup_size(64)
fn read_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t < p.tiles) { work[t] = select(0u, 1u, tile_nonzero(load_tile(t))); }
}

// One invocation per word of the class section (16 tiles) and then of the DC-code section
// (4 planes, each its largest |DC| coded under the header's e0).
@compute @workgroup_size(64)
fn pack_meta(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    let cls_words = (p.tiles + 15u) / 16u;
    if (i < cls_words) {
        var word = 0u;
        for (var k = 0u; k < 16u; k++) {
            let t = i * 16u + k;
            if (t < p.tiles) { word |= (work[t] & 3u) << (2u * k); }
        }
        atomicStore(&region[p.cls_off + i], word);
        return;
    }
    let j = i - cls_words;
    if (j >= (p.planes + 3u) / 4u) { return; }
    let e0 = header_e0();
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let plane = j * 4u + k;
        if (plane < p.planes) {
            word |= encode_scale(bitcast<f32>(atomicLoad(&plane_dcmax[plane])), e0) << (8u * k);
        }
    }
    atomicStore(&region[p.dc_off + j], word);
}

// work[t] = size in bits of tile t's class (the scan then turns sizes into offsets).
@compute @workgroup_size(64)
fn tile_sizes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t < p.tiles) { work[t] = class_size(tile_class(t)); }
}

// Bit writer of one invocation: word index, pending bits, their count. Whole words are OR-ed in
// (neighbouring tiles share boundary words). nbits is 1..=16.
struct Writer { word: u32, acc: u32, n: u32 }

fn put(wr: ptr<function, Writer>, value: u32, nbits: u32) {
    let v = value & ((1u << nbits) - 1u);
    (*wr).acc |= v << (*wr).n;
    let room = 32u - (*wr).n;
    if (nbits >= room) {
        atomicOr(&region[p.pay_off + (*wr).word], (*wr).acc);
        (*wr).word += 1u;
        (*wr).acc = select(v >> room, 0u, room == 32u);
        (*wr).n = nbits - room;
    } else {
        (*wr).n += nbits;
    }
}

fn flush(wr: ptr<function, Writer>) {
    if ((*wr).n > 0u) { atomicOr(&region[p.pay_off + (*wr).word], (*wr).acc); }
}

@compute @workgroup_size(64)
fn pack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t >= p.tiles) { return; }
    let cls = tile_class(t);
    if (cls == 0u) { return; }
    let start = work[t];
    var wr = Writer(start >> 5u, 0u, start & 31u);
    if (cls == 3u) {
        // A reference stores its representative (a tile of this segment) in 32 bits.
        let s = tile_state[3u * t + 2u];
        put(&wr, s & 0xffffu, 16u);
        put(&wr, s >> 16u, 16u);
        flush(&wr);
        return;
    }
    // Only full tiles need every coefficient; for DC-only tiles the compiler drops the rest.
    let c = dct_forward(load_tile(t));
    var coef: array<f32, 64>;
    if (cls == 2u) { store_coefs(c, &coef); }
    let dc = c.r0.a.x;
    let stochastic = p.stochastic != 0u;
    let gt = p.tile_base + t;
    // rng24(seed, stream, i) = hash32(key ^ i) >> 8 with the per-tensor part hashed once.
    let key = hash32(hash32(p.seed ^ 0x9e3779b9u) ^ p.stream);
    let e0 = header_e0();
    let bdc = band_bits(0u);
    if (bdc == 16u) {
        put(&wr, f16_bits(dc), 16u);
    } else {
        let dcode = dc_code(t / p.tiles_per_plane);
        let inv = select(inv_scale(dcode, e0), 0.0, dcode == 0u);
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
            let code = encode_scale(bmax, e0);
            put(&wr, code, 8u);
            let inv = select(inv_scale(code, e0), 0.0, code == 0u);
            for (var z = edge(b); z < edge(b + 1u); z++) {
                let r = hash32(key ^ (gt * 64u + z)) >> 8u;
                put(&wr, quantize_sym(coef[zigzag(z)], inv, bits, r, stochastic), bits);
            }
        }
    }
    flush(&wr);
}
