// Elementwise ops of the engine: ReLU with a 1-bit mask (bit i of word j = value 32j+i > 0), its
// backward, the mask alone, the mask-aware clamp, the residual add / gradient accumulation, and
// the residual add fused with the ReLU that follows it. One invocation per element (per mask word
// for relu_forward and positive_mask; add_relu gathers its words in workgroup memory) on a 2-D
// grid of 256-wide workgroups.

struct EwParams { n: u32, words: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<uniform> p: EwParams;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<u32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
@group(0) @binding(4) var<storage, read_write> out1: array<u32>;

var<workgroup> words: array<atomic<u32>, 8>;

// Set for relu_backward and mask_clamp over their input in place (it is then bound as out0, and
// each value is read before it is written, by the invocation that writes it).
override IN_PLACE: bool = false;

// Input value i of the masked entries.
fn masked_in(i: u32) -> f32 {
    if (IN_PLACE) { return out0[i]; }
    return in0[i];
}

fn linear_id(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// The mask word of values 32j .. 32j+31 (bit set where > 0); with `relu`, also y = max(x, 0).
fn mask_word(j: u32, relu: bool) -> u32 {
    let base = j * 32u;
    let end = min(base + 32u, p.n);
    var word = 0u;
    for (var i = base; i < end; i++) {
        let v = in0[i];
        let pos = v > 0.0;
        if (relu) { out0[i] = select(0.0, v, pos); }
        word |= select(0u, 1u << (i - base), pos);
    }
    return word;
}

// y = max(x, 0) and the mask word of 32 consecutive values.
@compute @workgroup_size(256)
fn relu_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let j = linear_id(wg, nwg, lid);
    if (j >= p.words) { return; }
    out1[j] = mask_word(j, true);
}

// The mask word of 32 consecutive values alone.
@compute @workgroup_size(256)
fn positive_mask(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let j = linear_id(wg, nwg, lid);
    if (j >= p.words) { return; }
    out1[j] = mask_word(j, false);
}

// dx = dy where the mask bit is set, else 0.
@compute @workgroup_size(256)
fn relu_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    let bit = (in1[i >> 5u] >> (i & 31u)) & 1u;
    out0[i] = select(0.0, masked_in(i), bit == 1u);
}

// max(x, 0) where the mask bit is set, else exactly 0 (mask-aware decode of a ReLU output).
@compute @workgroup_size(256)
fn mask_clamp(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    let bit = (in1[i >> 5u] >> (i & 31u)) & 1u;
    out0[i] = select(0.0, max(masked_in(i), 0.0), bit == 1u);
}

// out = a + b.
@compute @workgroup_size(256)
fn add(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
       @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    out0[i] = in0[i] + bitcast<f32>(in1[i]);
}

// acc += x.
@compute @workgroup_size(256)
fn add_into(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    out0[i] = out0[i] + in0[i];
}

// y = max(a + b, 0) and its mask words (a residual block's sum and output ReLU in one pass).
@compute @workgroup_size(256)
fn add_relu(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (lid < 8u) { atomicStore(&words[lid], 0u); }
    workgroupBarrier();
    if (i < p.n) {
        let v = in0[i] + bitcast<f32>(in1[i]);
        let pos = v > 0.0;
        out0[i] = select(0.0, v, pos);
        if (pos) { atomicOr(&words[lid / 32u], 1u << (lid % 32u)); }
    }
    workgroupBarrier();
    let word = (i - lid) / 32u + lid;
    if (lid < 8u && word < p.words) { out1[word] = atomicLoad(&words[lid]); }
}
