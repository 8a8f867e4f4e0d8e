// division (docs/CODEC.md): per 8x8 block of each edge-padded plane the mean in bf16 (nearest);
// the residual x - mean quantized to 2 bits with a per-plane bf16-floor minimum and range code.
//
// A segment holds whole planes starting at global value `base` and has its device region:
// header (e0 at word 8, the out-of-range flag at 14), block means (2 per word), per-plane
// residual minima (2 per word) and range codes (4 per word), the payload (local value i at bit
// 2i). The block statistics, pack and unpack run one invocation per 8x8 block (the tile loads of
// shaders/tile_load.wgsl): a block has one mean and one plane, so no value needs a lookup or an
// index division of its own. A block's rows are OR-ed into the payload (neighbouring blocks
// share words).

struct DivisionParams {
    planes: u32,           // planes in this segment
    h: u32,
    w: u32,
    tiles_x: u32,          // blocks per plane row
    tiles_per_plane: u32,  // blocks per plane
    blocks: u32,           // blocks in this segment
    n: u32,                // values in this segment
    words: u32,            // payload words of this segment
    base: u32,             // global flat index of the segment's first value (RNG index base)
    seed: u32,
    stream: u32,
    stochastic: u32,
    means_off: u32,        // region word of the block means
    mins_off: u32,         // region word of the residual minima
    codes_off: u32,        // region word of the residual range codes
    pay_off: u32,          // region word of the payload
}

const BITS: u32 = 2u;
const WG: u32 = 256u;
const BLOCK_WG: u32 = 64u;

const H_E0: u32 = 8u;
const H_FLAGS: u32 = 14u;

@group(0) @binding(1) var<uniform> p: DivisionParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per plane: the order-preserving bits of the least residual, inverted, and of the largest
// (block_stats); then the bf16 residual minimum and the f32 bits of `max - bf16_value(mn)`.
@group(0) @binding(3) var<storage, read_write> stats: array<atomic<u32>>;
// [0]: largest residual range (f32 bits; ranges are >= 0); [1]: non-zero when a value is out of range.
@group(0) @binding(4) var<storage, read_write> gmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> region: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;

fn word(i: u32) -> u32 { return atomicLoad(&region[i]); }
fn e0() -> i32 { return bitcast<i32>(word(H_E0)); }
fn half_word(off: u32, i: u32) -> u32 { return (word(off + (i >> 1u)) >> ((i & 1u) * 16u)) & 0xffffu; }
fn plane_code(q: u32) -> u32 { return (word(p.codes_off + (q >> 2u)) >> ((q & 3u) * 8u)) & 0xffu; }

// f32 bits whose unsigned order is the floats' order.
fn ordered(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn from_ordered(u: u32) -> f32 { return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u)); }

fn row_sum(acc0: f32, r: Row) -> f32 {
    return acc0 + r.a.x + r.a.y + r.a.z + r.a.w + r.b.x + r.b.y + r.b.z + r.b.w;
}

fn row_min(r: Row) -> f32 { let m = min(r.a, r.b); return min(min(m.x, m.y), min(m.z, m.w)); }
fn row_max(r: Row) -> f32 { let m = max(r.a, r.b); return max(max(m.x, m.y), max(m.z, m.w)); }
// Lossy inputs must be finite with |x| < 2^120 (src/reference/mod.rs); 2^120 has bits 0x7b800000.
fn vec_bad(v: vec4<f32>) -> bool { return any((bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) >= vec4<u32>(0x7b800000u)); }
fn row_bad(r: Row) -> bool { return vec_bad(r.a) || vec_bad(r.b); }

// Block b's mean (bf16 bits: its 64 edge-replicated values summed row-major in f32 from 0, over
// 64); its residuals' least and largest value go to its plane's statistics (the replicated values
// repeat residuals of the block's own values, so they change neither).
fn block_stat(b: u32) -> u32 {
    let x = load_tile(b);
    var sum = row_sum(0.0, x.r0);
    sum = row_sum(sum, x.r1);
    sum = row_sum(sum, x.r2);
    sum = row_sum(sum, x.r3);
    sum = row_sum(sum, x.r4);
    sum = row_sum(sum, x.r5);
    sum = row_sum(sum, x.r6);
    sum = row_sum(sum, x.r7);
    let mean = bf16_nearest(sum * 0.015625);
    let m = bf16_value(mean);
    let lo = min(min(min(row_min(x.r0), row_min(x.r1)), min(row_min(x.r2), row_min(x.r3))),
                 min(min(row_min(x.r4), row_min(x.r5)), min(row_min(x.r6), row_min(x.r7))));
    let hi = max(max(max(row_max(x.r0), row_max(x.r1)), max(row_max(x.r2), row_max(x.r3))),
                 max(max(row_max(x.r4), row_max(x.r5)), max(row_max(x.r6), row_max(x.r7))));
    let plane = b / p.tiles_per_plane;
    // x - m is monotonic in x, so the block's residual extremes are those of its extremes.
    atomicMax(&stats[2u * plane], ~ordered(lo - m));
    atomicMax(&stats[2u * plane + 1u], ordered(hi - m));
    let bad = row_bad(x.r0) || row_bad(x.r1) || row_bad(x.r2) || row_bad(x.r3) ||
              row_bad(x.r4) || row_bad(x.r5) || row_bad(x.r6) || row_bad(x.r7);
    if (bad) { atomicOr(&gmax[1], 1u); }
    return mean;
}

// One invocation per word of the means section: two blocks (the statistics start at zero).
@compute @workgroup_size(64)
fn block_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * BLOCK_WG + lid;
    if (i >= (p.blocks + 1u) / 2u) { return; }
    var w = block_stat(2u * i);
    if (2u * i + 1u < p.blocks) { w |= block_stat(2u * i + 1u) << 16u; }
    atomicStore(&region[p.means_off + i], w);
}

// One invocation per plane: its residual minimum (bf16, floor) and range.
@compute @workgroup_size(256)
fn plane_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let plane = group_index(wg, nwg) * WG + lid;
    if (plane >= p.planes) { return; }
    let mn = bf16_floor(from_ordered(~atomicLoad(&stats[2u * plane])));
    let range = from_ordered(atomicLoad(&stats[2u * plane + 1u])) - bf16_value(mn);
    atomicStore(&stats[2u * plane], mn);
    atomicStore(&stats[2u * plane + 1u], bitcast<u32>(range));
    atomicMax(&gmax[0], bitcast<u32>(range));
}

// One invocation: the segment's e0 from its largest residual range, and the out-of-range flag.
@compute @workgroup_size(1)
fn division_e0() {
    atomicStore(&region[H_E0], bitcast<u32>(clamp(exp_of(bitcast<f32>(atomicLoad(&gmax[0]))) + 1, -90, 128)));
    atomicStore(&region[H_FLAGS], atomicLoad(&gmax[1]));
}

// One invocation per word of the residual minima (2 planes) and then of the range codes (4
// planes, each under the header's e0).
@compute @workgroup_size(256)
fn plane_meta(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    let min_words = (p.planes + 1u) / 2u;
    var w = 0u;
    if (i < min_words) {
        for (var k = 0u; k < 2u; k++) {
            let q = 2u * i + k;
            if (q < p.planes) { w |= atomicLoad(&stats[2u * q]) << (16u * k); }
        }
        atomicStore(&region[p.mins_off + i], w);
        return;
    }
    let j = i - min_words;
    if (j >= (p.planes + 3u) / 4u) { return; }
    for (var k = 0u; k < 4u; k++) {
        let q = 4u * j + k;
        if (q < p.planes) { w |= encode_scale(bitcast<f32>(atomicLoad(&stats[2u * q + 1u])), e0()) << (8u * k); }
    }
    atomicStore(&region[p.codes_off + j], w);
}

// Where block b lies: its plane, the segment-local index of its first value, the values of each
// of its rows and the number of its rows inside the plane; its mean.
struct Block { plane: u32, first: u32, cols: u32, rows: u32, mean: f32 }

fn block_at(b: u32) -> Block {
    let plane = b / p.tiles_per_plane;
    let r = b % p.tiles_per_plane;
    let y0 = (r / p.tiles_x) * 8u;
    let x0 = (r % p.tiles_x) * 8u;
    let first = plane * p.h * p.w + y0 * p.w + x0;
    return Block(plane, first, min(8u, p.w - x0), min(8u, p.h - y0), bf16_value(half_word(p.means_off, b)));
}

// Where the codes of a row of `cols` values from value `first` sit: the payload word, the bit in
// it, and whether they spill into the next word.
struct RowAt { at: u32, s: u32, spills: bool }

fn row_at(first: u32, cols: u32) -> RowAt {
    let pos = BITS * first;
    let s = pos & 31u;
    return RowAt(p.pay_off + (pos >> 5u), s, s + BITS * cols > 32u);
}

// One invocation per block: each row's codes (2 bits per value) OR-ed in at the row's position.
@compute @workgroup_size(64)
fn pack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let b = group_index(wg, nwg) * BLOCK_WG + lid;
    if (b >= p.blocks) { return; }
    let k = block_at(b);
    let code = plane_code(k.plane);
    let inv = select(inv_scale(code, e0()), 0.0, code == 0u);
    let mn = bf16_value(half_word(p.mins_off, k.plane));
    let stochastic = p.stochastic != 0u;
    let key = rng_key(p.seed, p.stream);
    for (var y = 0u; y < k.rows; y++) {
        let first = k.first + y * p.w;
        var v = 0u;
        for (var j = 0u; j < k.cols; j++) {
            let i = first + j;
            let r = input[i] - k.mean;
            v |= quantize_asym(r, mn, inv, BITS, hash32(key ^ (p.base + i)) >> 8u, stochastic) << (BITS * j);
        }
        let r = row_at(first, k.cols);
        atomicOr(&region[r.at], v << r.s);
        if (r.spills) { atomicOr(&region[r.at + 1u], v >> (32u - r.s)); }
    }
}

// One invocation per block: block mean plus the dequantized residual of each of its values.
@compute @workgroup_size(64)
fn unpack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let b = group_index(wg, nwg) * BLOCK_WG + lid;
    if (b >= p.blocks) { return; }
    let k = block_at(b);
    let code = plane_code(k.plane);
    let range = select(scale_value(code, e0()), 0.0, code == 0u);
    let mn = bf16_value(half_word(p.mins_off, k.plane));
    for (var y = 0u; y < k.rows; y++) {
        let first = k.first + y * p.w;
        let r = row_at(first, k.cols);
        var v = word(r.at) >> r.s;
        if (r.spills) { v |= word(r.at + 1u) << (32u - r.s); }
        for (var j = 0u; j < k.cols; j++) {
            output[first + j] = k.mean + dequant_asym((v >> (BITS * j)) & 3u, BITS, mn, range);
        }
    }
}
