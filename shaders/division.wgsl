// division (docs/CODEC.md): per 8x8 block of each edge-padded plane the mean in bf16 (nearest);
// the residual x - mean quantized to 2 bits with a per-plane bf16-floor minimum and range code.
//
// A segment holds whole planes starting at global value `base` and has its device region:
// header (e0 at word 8, the out-of-range flag at 14), block means (2 per word), per-plane
// residual minima (2 per word) and range codes (4 per word), the payload (local value i at bit
// 2i). Packing runs one invocation per output word: no atomics.

struct DivisionParams {
    planes: u32,           // planes in this segment
    h: u32,
    w: u32,
    blocks_x: u32,         // blocks per plane row
    blocks_per_plane: u32,
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

const H_E0: u32 = 8u;
const H_FLAGS: u32 = 14u;

@group(0) @binding(1) var<uniform> p: DivisionParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per plane: bf16 residual minimum bits, then the f32 bits of the range `max - bf16_value(mn)`.
@group(0) @binding(3) var<storage, read_write> stats: array<u32>;
// [0]: largest residual range (f32 bits; ranges are >= 0); [1]: non-zero when a value is out of range.
@group(0) @binding(4) var<storage, read_write> gmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> region: array<u32>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;

fn e0() -> i32 { return bitcast<i32>(region[H_E0]); }
fn half_word(off: u32, i: u32) -> u32 { return (region[off + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu; }
fn plane_code(q: u32) -> u32 { return (region[p.codes_off + (q >> 2u)] >> ((q & 3u) * 8u)) & 0xffu; }

var<workgroup> lo: array<f32, 256>;
var<workgroup> hi: array<f32, 256>;

// Lossy inputs must be finite with |x| < 2^120 (src/reference/mod.rs); 2^120 has bits 0x7b800000.
fn out_of_range(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) >= 0x7b800000u; }

// The block mean (as an f32) of chunk-local value i.
fn mean_of(i: u32) -> f32 {
    let hw = p.h * p.w;
    let plane = i / hw;
    let k = i % hw;
    let b = plane * p.blocks_per_plane + (k / p.w / 8u) * p.blocks_x + (k % p.w) / 8u;
    return bf16_value(half_word(p.means_off, b));
}

// bf16 bits of the mean of block b's 64 edge-replicated values, summed row-major in f32.
fn block_mean(b: u32) -> u32 {
    let plane = b / p.blocks_per_plane;
    let r = b % p.blocks_per_plane;
    let y0 = (r / p.blocks_x) * 8u;
    let x0 = (r % p.blocks_x) * 8u;
    let base = plane * p.h * p.w;
    var sum = 0.0;
    for (var i = 0u; i < 8u; i++) {
        let row = base + min(y0 + i, p.h - 1u) * p.w;
        for (var j = 0u; j < 8u; j++) { sum += input[row + min(x0 + j, p.w - 1u)]; }
    }
    return bf16_nearest(sum * 0.015625);
}

// One invocation per word of the means section: two blocks.
@compute @workgroup_size(256)
fn block_means(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    if (i >= (p.blocks + 1u) / 2u) { return; }
    var word = block_mean(2u * i);
    if (2u * i + 1u < p.blocks) { word |= block_mean(2u * i + 1u) << 16u; }
    region[p.means_off + i] = word;
}

// One workgroup per plane: min and max of the residuals, strided then reduced in shared memory.
@compute @workgroup_size(256)
fn plane_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let plane = group_index(wg, nwg);
    if (plane >= p.planes) { return; }
    let hw = p.h * p.w;
    let start = plane * hw;
    let r0 = input[start] - mean_of(start);
    var l = r0;
    var u = r0;
    var bad = false;
    for (var k = lid; k < hw; k += WG) {
        let x = input[start + k];
        let r = x - mean_of(start + k);
        bad = bad || out_of_range(x);
        l = min(l, r);
        u = max(u, r);
    }
    if (bad) { atomicOr(&gmax[1], 1u); }
    lo[lid] = l;
    hi[lid] = u;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            lo[lid] = min(lo[lid], lo[lid + s]);
            hi[lid] = max(hi[lid], hi[lid + s]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        let mn = bf16_floor(lo[0]);
        let range = hi[0] - bf16_value(mn);
        stats[2u * plane] = mn;
        stats[2u * plane + 1u] = bitcast<u32>(range);
        atomicMax(&gmax[0], bitcast<u32>(range));
    }
}

// One invocation: the segment's e0 from its largest residual range, and the out-of-range flag.
@compute @workgroup_size(1)
fn division_e0() {
    region[H_E0] = bitcast<u32>(clamp(exp_of(bitcast<f32>(atomicLoad(&gmax[0]))) + 1, -90, 128));
    region[H_FLAGS] = atomicLoad(&gmax[1]);
}

// One invocation per word of the residual minima (2 planes) and then of the range codes (4
// planes, each under the header's e0).
@compute @workgroup_size(256)
fn plane_meta(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    let min_words = (p.planes + 1u) / 2u;
    var word = 0u;
    if (i < min_words) {
        for (var k = 0u; k < 2u; k++) {
            let q = 2u * i + k;
            if (q < p.planes) { word |= stats[2u * q] << (16u * k); }
        }
        region[p.mins_off + i] = word;
        return;
    }
    let j = i - min_words;
    if (j >= (p.planes + 3u) / 4u) { return; }
    for (var k = 0u; k < 4u; k++) {
        let q = 4u * j + k;
        if (q < p.planes) { word |= encode_scale(bitcast<f32>(stats[2u * q + 1u]), e0()) << (8u * k); }
    }
    region[p.codes_off + j] = word;
}

// One invocation per output word: the (up to) 16 residual codes it holds.
@compute @workgroup_size(256)
fn pack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let w = group_index(wg, nwg) * WG + lid;
    if (w >= p.words) { return; }
    let hw = p.h * p.w;
    let stochastic = p.stochastic != 0u;
    var word = 0u;
    for (var k = 0u; k < 16u; k++) {
        let i = w * 16u + k;
        if (i >= p.n) { break; }
        let q0 = i / hw;
        let code = plane_code(q0);
        let inv = select(inv_scale(code, e0()), 0.0, code == 0u);
        let r = input[i] - mean_of(i);
        let mn = bf16_value(half_word(p.mins_off, q0));
        let q = quantize_asym(r, mn, inv, BITS, rng24(p.seed, p.stream, p.base + i), stochastic);
        word |= q << (BITS * k);
    }
    region[p.pay_off + w] = word;
}

// One invocation per value: block mean plus the dequantized residual.
@compute @workgroup_size(256)
fn unpack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    if (i >= p.n) { return; }
    let pos = BITS * i;
    let q = (region[p.pay_off + (pos >> 5u)] >> (pos & 31u)) & 3u;
    let q0 = i / (p.h * p.w);
    let code = plane_code(q0);
    let range = select(scale_value(code, e0()), 0.0, code == 0u);
    output[i] = mean_of(i) + dequant_asym(q, BITS, bf16_value(half_word(p.mins_off, q0)), range);
}
