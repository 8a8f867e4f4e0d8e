// uniform:B and the fdsr flat path (docs/CODEC.md): the flattened tensor in groups of 256 values,
// per group a bf16-floor minimum and a scale code of the range, asymmetric codes of B bits.
//
// A group holds 256·B bits = 8·B whole words, so every payload word belongs to exactly one group
// and chunks of whole groups are word-aligned. Packing runs one invocation per output word, which
// gathers every code touching the word: no atomics.

struct UniformParams {
    n: u32,          // values in this chunk
    groups: u32,     // groups in this chunk
    words: u32,      // payload words in this chunk
    bits: u32,       // bits per code, 1..=8
    base: u32,       // global flat index of the chunk's first value (RNG index base)
    seed: u32,
    stream: u32,
    stochastic: u32,
    e0: i32,
    _p0: u32, _p1: u32, _p2: u32,
}

const GROUP: u32 = 256u;

@group(0) @binding(1) var<uniform> p: UniformParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per group: bf16 minimum bits, then the f32 bits of the range `max - bf16_value(mn)`.
@group(0) @binding(3) var<storage, read_write> stats: array<u32>;
// [0]: largest range (f32 bits, ranges are >= 0 so u32 order is f32 order); [1]: non-zero when
// some value is out of range (not finite, or |x| >= 2^120).
@group(0) @binding(4) var<storage, read_write> gmax: array<atomic<u32>>;
// Per group: bf16 minimum in the low 16 bits, range scale code in bits 16..24.
@group(0) @binding(5) var<storage, read_write> group_info: array<u32>;
@group(0) @binding(6) var<storage, read_write> payload: array<u32>;
@group(0) @binding(7) var<storage, read_write> output: array<f32>;

var<workgroup> lo: array<f32, 256>;
var<workgroup> hi: array<f32, 256>;

// Lossy inputs must be finite with |x| < 2^120 (src/reference/mod.rs); 2^120 has bits 0x7b800000.
fn out_of_range(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) >= 0x7b800000u; }

// One workgroup per group: min and max by shared-memory reduction.
@compute @workgroup_size(256)
fn group_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wg, nwg);
    if (g >= p.groups) { return; }
    // A partial last group repeats its last value, which changes neither min nor max.
    let x = input[min(g * GROUP + lid, p.n - 1u)];
    if (out_of_range(x)) { atomicOr(&gmax[1], 1u); }
    lo[lid] = x;
    hi[lid] = x;
    workgroupBarrier();
    for (var s = GROUP / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            lo[lid] = min(lo[lid], lo[lid + s]);
            hi[lid] = max(hi[lid], hi[lid + s]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        let mn = bf16_floor(lo[0]);
        let range = hi[0] - bf16_value(mn);
        stats[2u * g] = mn;
        stats[2u * g + 1u] = bitcast<u32>(range);
        atomicMax(&gmax[0], bitcast<u32>(range));
    }
}

// One invocation per group: the range scale code under the tensor's e0.
@compute @workgroup_size(256)
fn group_codes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wg, nwg) * 256u + lid;
    if (g >= p.groups) { return; }
    let code = encode_scale(bitcast<f32>(stats[2u * g + 1u]), p.e0);
    group_info[g] = stats[2u * g] | (code << 16u);
}

// One invocation per output word: quantizes every value whose code touches the word.
@compute @workgroup_size(256)
fn pack_groups(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let w = group_index(wg, nwg) * 256u + lid;
    if (w >= p.words) { return; }
    let words_per_group = 8u * p.bits;
    let g = w / words_per_group;
    let bit0 = (w % words_per_group) * 32u; // first bit of the word within its group
    let info = group_info[g];
    let mn = bf16_value(info & 0xffffu);
    let code = info >> 16u;
    let inv = select(inv_scale(code, p.e0), 0.0, code == 0u);
    let stochastic = p.stochastic != 0u;
    var word = 0u;
    for (var j = bit0 / p.bits; j <= (bit0 + 31u) / p.bits; j++) {
        let i = g * GROUP + j;
        if (i >= p.n) { break; }
        let q = quantize_asym(input[i], mn, inv, p.bits, rng24(p.seed, p.stream, p.base + i), stochastic);
        let s = i32(j * p.bits) - i32(bit0);
        word |= select(q >> u32(-s), q << u32(s), s >= 0);
    }
    payload[w] = word;
}

// One invocation per value: reads its code and dequantizes.
@compute @workgroup_size(256)
fn unpack_groups(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * 256u + lid;
    if (i >= p.n) { return; }
    let g = i / GROUP;
    let pos = (i % GROUP) * p.bits;
    let w = g * 8u * p.bits + (pos >> 5u);
    let s = pos & 31u;
    var v = payload[w] >> s;
    if (s + p.bits > 32u) { v |= payload[w + 1u] << (32u - s); }
    let q = v & ((1u << p.bits) - 1u);
    let info = group_info[g];
    let code = info >> 16u;
    let range = select(scale_value(code, p.e0), 0.0, code == 0u);
    output[i] = dequant_asym(q, p.bits, bf16_value(info & 0xffffu), range);
}
