// Batch norm 2-D over (N, H, W) per channel. Reductions run one workgroup per channel: each
// invocation sums a fixed strided subset in order, then a fixed-order tree in workgroup memory
// (deterministic, no float atomics). Mean and variance take two passes (mean, then squared
// deviations). Elementwise kernels run one invocation per element.

struct BnParams { c: u32, hw: u32, m: u32, total: u32, momentum: f32, eps: f32, unbias: f32, _a: u32 }

@group(0) @binding(0) var<uniform> p: BnParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>; // beta in bn_apply
@group(0) @binding(3) var<storage, read> gamma: array<f32>;
@group(0) @binding(4) var<storage, read_write> mean: array<f32>;
@group(0) @binding(5) var<storage, read_write> invstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> sa: array<f32>; // running mean | dgamma
@group(0) @binding(7) var<storage, read_write> sb: array<f32>; // running var | dbeta
@group(0) @binding(8) var<storage, read_write> out: array<f32>; // y | dx

var<workgroup> s0: array<f32, 256>;
var<workgroup> s1: array<f32, 256>;

fn linear_id(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

// Index of the m-th value (over N, H, W) of channel c.
fn at(c: u32, m: u32) -> u32 {
    return ((m / p.hw) * p.c + c) * p.hw + m % p.hw;
}

// Sums s0 and s1 into element 0 (callers have written them and passed a barrier).
fn tree(lid: u32) {
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            s0[lid] += s0[lid + s];
            s1[lid] += s1[lid + s];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn bn_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wg.x;
    var a = 0.0;
    for (var m = lid; m < p.m; m += 256u) { a += x[at(c, m)]; }
    s0[lid] = a;
    s1[lid] = 0.0;
    workgroupBarrier();
    tree(lid);
    let mu = s0[0] / f32(p.m);
    workgroupBarrier();
    var q = 0.0;
    for (var m = lid; m < p.m; m += 256u) {
        let d = x[at(c, m)] - mu;
        q += d * d;
    }
    s0[lid] = q;
    s1[lid] = 0.0;
    workgroupBarrier();
    tree(lid);
    if (lid == 0u) {
        let var_b = s0[0] / f32(p.m);
        mean[c] = mu;
        invstd[c] = 1.0 / sqrt(var_b + p.eps);
        sa[c] = (1.0 - p.momentum) * sa[c] + p.momentum * mu;
        sb[c] = (1.0 - p.momentum) * sb[c] + p.momentum * (var_b * p.unbias);
    }
}

// Eval mode: mean and invstd from the running statistics (one invocation per channel).
@compute @workgroup_size(256)
fn bn_eval_stats(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let c = linear_id(wg, nwg, lid);
    if (c >= p.c) { return; }
    mean[c] = sa[c];
    invstd[c] = 1.0 / sqrt(sb[c] + p.eps);
}

// y = gamma (x - mean) invstd + beta (beta bound at binding 2).
@compute @workgroup_size(256)
fn bn_apply(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.total) { return; }
    let c = (i / p.hw) % p.c;
    out[i] = gamma[c] * ((x[i] - mean[c]) * invstd[c]) + dy[c];
}

// dgamma = sum dy * xhat, dbeta = sum dy (one workgroup per channel).
@compute @workgroup_size(256)
fn bn_backward_reduce(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wg.x;
    let mu = mean[c];
    let is = invstd[c];
    var a = 0.0;
    var b = 0.0;
    for (var m = lid; m < p.m; m += 256u) {
        let i = at(c, m);
        let g = dy[i];
        a += g;
        b += g * ((x[i] - mu) * is);
    }
    s0[lid] = a;
    s1[lid] = b;
    workgroupBarrier();
    tree(lid);
    if (lid == 0u) {
        sa[c] = s1[0];
        sb[c] = s0[0];
    }
}

// dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)).
@compute @workgroup_size(256)
fn bn_backward_dx(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.total) { return; }
    let c = (i / p.hw) % p.c;
    let inv_m = 1.0 / f32(p.m);
    let xh = (x[i] - mean[c]) * invstd[c];
    out[i] = gamma[c] * invstd[c] * (dy[i] - sb[c] * inv_m - xh * (sa[c] * inv_m));
}
