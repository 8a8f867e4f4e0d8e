// uniform:B and the fdsr flat path (docs/CODEC.md): the flattened tensor in groups of 256 values,
// per group a bf16-floor minimum and a scale code of the range, asymmetric codes of B bits.
//
// A group holds 256·B bits = 8·B whole words, so every payload word belongs to exactly one group
// and segments of whole groups are word-aligned. Each segment has its device region: header (e0
// at word 8, the out-of-range flag at 14), the groups' minima (2 per word), their range codes
// (4 per word), the payload. Packing runs one invocation per output word (no atomics), unpacking
// one per 32 values (B words of one group, whose minimum and range it reads once).

struct UniformParams {
    n: u32,          // values in this segment
    groups: u32,     // groups in this segment
    words: u32,      // payload words in this segment
    bits: u32,       // bits per code, 1..=8
    base: u32,       // global flat index of the segment's first value (RNG index base)
    seed: u32,
    stream: u32,
    stochastic: u32,
    mins_off: u32,   // region word of the minima
    codes_off: u32,  // region word of the range codes
    pay_off: u32,    // region word of the payload
    _p0: u32,
}

const GROUP: u32 = 256u;
const H_E0: u32 = 8u;
const H_FLAGS: u32 = 14u;

@group(0) @binding(1) var<uniform> p: UniformParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per group: bf16 minimum bits, then the f32 bits of the range `max - bf16_value(mn)`.
@group(0) @binding(3) var<storage, read_write> stats: array<u32>;
// [0]: largest range (f32 bits, ranges are >= 0 so u32 order is f32 order); [1]: non-zero when
// some value is out of range (not finite, or |x| >= 2^120).
@group(0) @binding(4) var<storage, read_write> gmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> region: array<u32>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;

fn e0() -> i32 { return bitcast<i32>(region[H_E0]); }
fn group_min(g: u32) -> f32 { return bf16_value((region[p.mins_off + (g >> 1u)] >> ((g & 1u) * 16u)) & 0xffffu); }
fn group_code(g: u32) -> u32 { return (region[p.codes_off + (g >> 2u)] >> ((g & 3u) * 8u)) & 0xffu; }

// Lossy inputs must be finite with |x| < 2^120 (src/reference/mod.rs); 2^120 has bits 0x7b800000.
fn out_of_range(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) >= 0x7b800000u; }

// One invocation per group: min and max over its values in order (no barriers: on a software
// adapter a workgroup tree per group of 256 cost fifteen times a copy).
@compute @workgroup_size(256)
fn group_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wg, nwg) * 256u + lid;
    if (g >= p.groups) { return; }
    let first = g * GROUP;
    let last = min(first + GROUP, p.n);
    var l = input[first];
    var u = l;
    var bad = false;
    for (var i = first; i < last; i++) {
        let x = input[i];
        bad = bad || out_of_range(x);
        l = min(l, x);
        u = max(u, x);
    }
    if (bad) { atomicOr(&gmax[1], 1u); }
    let mn = bf16_floor(l);
    let range = u - bf16_value(mn);
    stats[2u * g] = mn;
    stats[2u * g + 1u] = bitcast<u32>(range);
    atomicMax(&gmax[0], bitcast<u32>(range));
}

// One invocation: the segment's e0 from its largest range, and the out-of-range flag.
@compute @workgroup_size(1)
fn group_e0() {
    region[H_E0] = bitcast<u32>(clamp(exp_of(bitcast<f32>(atomicLoad(&gmax[0]))) + 1, -90, 128));
    region[H_FLAGS] = atomicLoad(&gmax[1]);
}

// One invocation per word of the minima (2 groups) and then of the range codes (4 groups, each
// under the header's e0).
@compute @workgroup_size(256)
fn group_meta(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * 256u + lid;
    let min_words = (p.groups + 1u) / 2u;
    var word = 0u;
    if (i < min_words) {
        for (var k = 0u; k < 2u; k++) {
            let g = 2u * i + k;
            if (g < p.groups) { word |= stats[2u * g] << (16u * k); }
        }
        region[p.mins_off + i] = word;
        return;
    }
    let j = i - min_words;
    if (j >= (p.groups + 3u) / 4u) { return; }
    for (var k = 0u; k < 4u; k++) {
        let g = 4u * j + k;
        if (g < p.groups) { word |= encode_scale(bitcast<f32>(stats[2u * g + 1u]), e0()) << (8u * k); }
    }
    region[p.codes_off + j] = word;
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
    let mn = group_min(g);
    let code = group_code(g);
    let inv = select(inv_scale(code, e0()), 0.0, code == 0u);
    let stochastic = p.stochastic != 0u;
    let key = rng_key(p.seed, p.stream);
    var word = 0u;
    for (var j = bit0 / p.bits; j <= (bit0 + 31u) / p.bits; j++) {
        let i = g * GROUP + j;
        if (i >= p.n) { break; }
        let q = quantize_asym(input[i], mn, inv, p.bits, hash32(key ^ (p.base + i)) >> 8u, stochastic);
        let s = i32(j * p.bits) - i32(bit0);
        word |= select(q >> u32(-s), q << u32(s), s >= 0);
    }
    region[p.pay_off + w] = word;
}

// One invocation per value: reads its code and dequantizes.
// Values per invocation of unpack_groups: 32 codes of B bits are B whole words of one group.
const SLICE: u32 = 32u;

@compute @workgroup_size(256)
fn unpack_groups(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let slice = group_index(wg, nwg) * 256u + lid;
    let first = slice * SLICE;
    if (first >= p.n) { return; }
    // The group's minimum and range once for its slice, not once per value.
    let g = first / GROUP;
    let code = group_code(g);
    let range = select(scale_value(code, e0()), 0.0, code == 0u);
    let mn = group_min(g);
    let words = p.pay_off + slice * p.bits;
    let mask = (1u << p.bits) - 1u;
    for (var j = 0u; j < min(SLICE, p.n - first); j++) {
        let pos = j * p.bits;
        let w = words + (pos >> 5u);
        let s = pos & 31u;
        var v = region[w] >> s;
        if (s + p.bits > 32u) { v |= region[w + 1u] << (32u - s); }
        output[first + j] = dequant_asym(v & mask, p.bits, mn, range);
    }
}
