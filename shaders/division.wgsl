// division (docs/CODEC.md): per 8x8 block of each edge-padded plane the mean in bf16 (nearest);
// the residual x - mean quantized to 2 bits with a per-plane bf16-floor minimum and range code.
//
// A chunk holds whole planes starting at global value `base`; its code of local value i sits at
// bit `bit0 + 2i` of the chunk's words, bit0 = (2·base) mod 32, so the host joins chunk payloads
// by OR-ing one shared boundary word. Packing runs one invocation per output word: no atomics.

struct DivisionParams {
    planes: u32,           // planes in this chunk
    h: u32,
    w: u32,
    blocks_x: u32,         // blocks per plane row
    blocks_per_plane: u32,
    blocks: u32,           // blocks in this chunk
    n: u32,                // values in this chunk
    words: u32,            // payload words of this chunk
    base: u32,             // global flat index of the chunk's first value (RNG index base)
    bit0: u32,             // bit offset of the chunk's first code in its first word
    seed: u32,
    stream: u32,
    stochastic: u32,
    e0: i32,
    _p0: u32, _p1: u32,
}

const BITS: u32 = 2u;
const WG: u32 = 256u;

@group(0) @binding(1) var<uniform> p: DivisionParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per block: bf16 bits of the mean, blocks row-major per plane.
@group(0) @binding(3) var<storage, read_write> means: array<u32>;
// Per plane: bf16 residual minimum bits, then the f32 bits of the range `max - bf16_value(mn)`.
@group(0) @binding(4) var<storage, read_write> stats: array<u32>;
// [0]: largest residual range (f32 bits; ranges are >= 0); [1]: non-zero when a value is out of range.
@group(0) @binding(5) var<storage, read_write> gmax: array<atomic<u32>>;
// Per plane: bf16 minimum in the low 16 bits, range scale code in bits 16..24.
@group(0) @binding(6) var<storage, read_write> plane_info: array<u32>;
@group(0) @binding(7) var<storage, read_write> payload: array<u32>;
@group(0) @binding(8) var<storage, read_write> output: array<f32>;

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
    return bf16_value(means[b]);
}

// One invocation per block: the mean of its 64 edge-replicated values, summed row-major in f32.
@compute @workgroup_size(256)
fn block_means(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let b = group_index(wg, nwg) * WG + lid;
    if (b >= p.blocks) { return; }
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
    means[b] = bf16_nearest(sum * 0.015625);
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

// One invocation per plane: the residual range scale code under the tensor's e0.
@compute @workgroup_size(256)
fn plane_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let plane = group_index(wg, nwg) * WG + lid;
    if (plane >= p.planes) { return; }
    let code = encode_scale(bitcast<f32>(stats[2u * plane + 1u]), p.e0);
    plane_info[plane] = stats[2u * plane] | (code << 16u);
}

// One invocation per output word: the (up to) 16 residual codes it holds.
@compute @workgroup_size(256)
fn pack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let w = group_index(wg, nwg) * WG + lid;
    if (w >= p.words) { return; }
    let hw = p.h * p.w;
    let stochastic = p.stochastic != 0u;
    let first = i32(w * 16u) - i32(p.bit0 / BITS); // local index of the code at bit 0 of word w
    var word = 0u;
    for (var k = 0u; k < 16u; k++) {
        let li = first + i32(k);
        if (li < 0) { continue; }
        let i = u32(li);
        if (i >= p.n) { break; }
        let info = plane_info[i / hw];
        let code = info >> 16u;
        let inv = select(inv_scale(code, p.e0), 0.0, code == 0u);
        let r = input[i] - mean_of(i);
        let q = quantize_asym(r, bf16_value(info & 0xffffu), inv, BITS, rng24(p.seed, p.stream, p.base + i), stochastic);
        word |= q << (BITS * k);
    }
    payload[w] = word;
}

// One invocation per value: block mean plus the dequantized residual.
@compute @workgroup_size(256)
fn unpack_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    if (i >= p.n) { return; }
    let pos = p.bit0 + BITS * i;
    let q = (payload[pos >> 5u] >> (pos & 31u)) & 3u;
    let info = plane_info[i / (p.h * p.w)];
    let code = info >> 16u;
    let range = select(scale_value(code, p.e0), 0.0, code == 0u);
    output[i] = mean_of(i) + dequant_asym(q, BITS, bf16_value(info & 0xffffu), range);
}
