// DFQ gate backward (src/reference/gate.rs). `gate_backward`, one workgroup per input n of
// x [N, PER]: dot_k = <dx_n, Q_k(x_n)> with Q_k nearest rounding to fw[k] bits over the forward's
// range (mm[512], mm[513]), the straight-through gradient of choosing option k. With the mean
// relative cost R = (1/N) sum_m sum_k probs[m, k] cost[k], a_k = dot_k + 2 alpha (R - goal)
// cost[k] / N and dlogit_k = probs_k (a_k - sum_j probs_j a_j) / tau. `gate_grad`, one
// workgroup: wgrad[k, c] = sum_n dlogit[n, k] means[n, c], bgrad[k] = sum_n dlogit[n, k].
// GateParams: gate_params.wgsl.

@group(0) @binding(0) var<uniform> p: GateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dx: array<f32>;
@group(0) @binding(3) var<storage, read> mm: array<f32>;
@group(0) @binding(4) var<storage, read> probs: array<f32>;
@group(0) @binding(5) var<storage, read> means: array<f32>;
@group(0) @binding(6) var<storage, read_write> dlogit: array<f32>;
@group(0) @binding(7) var<storage, read_write> wgrad: array<f32>;
@group(0) @binding(8) var<storage, read_write> bgrad: array<f32>;

var<workgroup> acc: array<vec4<f32>, 256>;

// v quantized to `bits` over [mn, mn + range] with nearest rounding (fakequant.wgsl's formula).
fn quantize(v: f32, mn: f32, range: f32, bits: u32) -> f32 {
    if (!(range > 0.0)) { return v; }
    let levels = f32((1u << bits) - 1u);
    let q = clamp(floor((v - mn) * (levels / range) + 0.5), 0.0, levels);
    return mn + q * (range / levels);
}

@compute @workgroup_size(256)
fn gate_backward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let n = wg.y * nwg.x + wg.x;
    if (n >= p.n) { return; }
    let mn = mm[512];
    let range = mm[513] - mn;
    var a = vec4<f32>(0.0);
    for (var i = lid; i < p.per; i += 256u) {
        let v = x[n * p.per + i];
        let d = dx[n * p.per + i];
        for (var k = 0u; k < p.k; k++) {
            a[k] += d * quantize(v, mn, range, p.fw[k]);
        }
    }
    acc[lid] = a;
    for (var s = 128u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lid < s) {
            acc[lid] += acc[lid + s];
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        var r = 0.0;
        for (var m = 0u; m < p.n; m++) {
            for (var k = 0u; k < p.k; k++) {
                r += probs[m * p.k + k] * p.cost[k];
            }
        }
        r /= f32(p.n);
        let pull = 2.0 * p.alpha * (r - p.goal) / f32(p.n);
        var g = acc[0];
        var mean = 0.0;
        for (var k = 0u; k < p.k; k++) {
            g[k] += pull * p.cost[k];
            mean += probs[n * p.k + k] * g[k];
        }
        for (var k = 0u; k < p.k; k++) {
            let pk = probs[n * p.k + k];
            dlogit[n * p.k + k] = pk * (g[k] - mean) / p.tau;
        }
    }
}

@compute @workgroup_size(256)
fn gate_grad(@builtin(local_invocation_index) lid: u32) {
    let kc = p.k * p.c;
    for (var j = lid; j < kc + p.k; j += 256u) {
        var s = 0.0;
        if (j < kc) {
            let k = j / p.c;
            let c = j % p.c;
            for (var n = 0u; n < p.n; n++) {
                s += dlogit[n * p.k + k] * means[n * p.c + c];
            }
            wgrad[j] = s;
        } else {
            for (var n = 0u; n < p.n; n++) {
                s += dlogit[n * p.k + j - kc];
            }
            bgrad[j - kc] = s;
        }
    }
}
