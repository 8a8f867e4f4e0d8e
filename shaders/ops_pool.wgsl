// Pooling of the engine. Max-pool 2x2 stride 2 keeps the argmax of each window as 2 bits per
// output (16 per word; 0 = top-left, 1 = top-right, 2 = bottom-left, 3 = bottom-right; the first
// maximum wins), one invocation per index word; its backward gathers (each input element reads
// its window's index), and so does the forward's output recomputed from its input and indices.
// Global average pool: one invocation per plane, summing in order.

struct PoolParams { planes: u32, h: u32, w: u32, outputs: u32, words: u32, total: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<uniform> p: PoolParams;
@group(0) @binding(1) var<storage, read> inp: array<f32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_idx: array<u32>;

fn linear_id(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// Index of the top-left input of max-pool output o's window.
fn window_start(o: u32) -> u32 {
    let ow = p.w / 2u;
    let r = o % ((p.h / 2u) * ow);
    return (o / ((p.h / 2u) * ow)) * p.h * p.w + (r / ow) * 2u * p.w + (r % ow) * 2u;
}

@compute @workgroup_size(256)
fn maxpool_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let j = linear_id(wg, nwg, lid);
    if (j >= p.words) { return; }
    let base = j * 16u;
    let end = min(base + 16u, p.outputs);
    var word = 0u;
    for (var o = base; o < end; o++) {
        let i0 = window_start(o);
        var best = inp[i0];
        var k = 0u;
        let v1 = inp[i0 + 1u];
        if (v1 > best) { best = v1; k = 1u; }
        let v2 = inp[i0 + p.w];
        if (v2 > best) { best = v2; k = 2u; }
        let v3 = inp[i0 + p.w + 1u];
        if (v3 > best) { best = v3; k = 3u; }
        out[o] = best;
        word |= k << (2u * (o - base));
    }
    out_idx[j] = word;
}

// inp = the forward's input (or a stand-in for it), idx = its index words; out = the values at
// the forward's argmax of each window: the forward's output again, bit for bit, from its input.
@compute @workgroup_size(256)
fn maxpool_gather(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let o = linear_id(wg, nwg, lid);
    if (o >= p.outputs) { return; }
    let k = (idx[o >> 4u] >> ((o & 15u) * 2u)) & 3u;
    out[o] = inp[window_start(o) + (k >> 1u) * p.w + (k & 1u)];
}

// inp = dy of the outputs, idx = the forward's index words; out = dx of the inputs.
@compute @workgroup_size(256)
fn maxpool_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.total) { return; }
    let plane = i / (p.h * p.w);
    let r = i % (p.h * p.w);
    let y = r / p.w;
    let x = r % p.w;
    let o = (plane * (p.h / 2u) + y / 2u) * (p.w / 2u) + x / 2u;
    let k = (idx[o >> 4u] >> ((o & 15u) * 2u)) & 3u;
    out[i] = select(0.0, inp[o], k == (y & 1u) * 2u + (x & 1u));
}

@compute @workgroup_size(256)
fn avgpool_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.planes) { return; }
    let hw = p.h * p.w;
    var s = 0.0;
    for (var r = 0u; r < hw; r++) {
        s += inp[i * hw + r];
    }
    out[i] = s / f32(hw);
}

@compute @workgroup_size(256)
fn avgpool_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.total) { return; }
    let hw = p.h * p.w;
    out[i] = inp[i / hw] / f32(hw);
}
