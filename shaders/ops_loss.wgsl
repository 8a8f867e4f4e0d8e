// Softmax cross-entropy, mean over the batch: one invocation per row (stable log-sum-exp, the
// probabilities, the row's loss and whether its first argmax is the label), then one workgroup
// sums the rows (`block_sum2` of the reduce prelude: a fixed order, deterministic). Also its
// gradient and an on-GPU metrics accumulator.

struct LossParams { b: u32, c: u32, total: u32, _a: u32 }

@group(0) @binding(0) var<uniform> p: LossParams;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<u32>;
@group(0) @binding(3) var<storage, read_write> out0: array<f32>;
@group(0) @binding(4) var<storage, read_write> out1: array<f32>;
@group(0) @binding(5) var<storage, read_write> out2: array<f32>;

fn linear_id(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// in0 = logits, in1 = labels; out0 = probs, out1 = row losses, out2 = row hits (0 or 1).
@compute @workgroup_size(256)
fn ce_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.b) { return; }
    let row = i * p.c;
    var mx = in0[row];
    var arg = 0u;
    for (var k = 1u; k < p.c; k++) {
        let v = in0[row + k];
        if (v > mx) { mx = v; arg = k; }
    }
    var s = 0.0;
    for (var k = 0u; k < p.c; k++) {
        s += exp(in0[row + k] - mx);
    }
    for (var k = 0u; k < p.c; k++) {
        out0[row + k] = exp(in0[row + k] - mx) / s;
    }
    let label = min(in1[i], p.c - 1u);
    out1[i] = mx + log(s) - in0[row + label];
    out2[i] = select(0.0, 1.0, arg == label);
}

// in0 = row losses, in1 = row hits (f32 bits); out0[0] = mean loss, out1[0] = hit count. Each
// invocation adds rows lid, lid + 256, … in order, then the workgroup's sum.
@compute @workgroup_size(256)
fn ce_reduce(ids: Ids) {
    var a = vec2<f32>(0.0);
    for (var i = ids.lid; i < p.b; i += 256u) {
        a += vec2<f32>(in0[i], bitcast<f32>(in1[i]));
    }
    let s = block_sum2(a, ids);
    if (ids.lid == 0u) {
        out0[0] = s.x / f32(p.b);
        out1[0] = s.y;
    }
}

// in0 = probs, in1 = labels; out0 = (probs - onehot) / B.
@compute @workgroup_size(256)
fn ce_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.total) { return; }
    let hot = (i % p.c) == in1[i / p.c];
    out0[i] = (in0[i] - select(0.0, 1.0, hot)) / f32(p.b);
}

// in0 = mean loss [1], in1 = hit count [1] (f32 bits); out0 = [sum of losses, sum of hits].
@compute @workgroup_size(1)
fn accumulate_metrics() {
    out0[0] = out0[0] + in0[0];
    out0[1] = out0[1] + bitcast<f32>(in1[0]);
}
