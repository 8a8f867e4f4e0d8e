// DFQ gate forward (src/reference/gate.rs): one workgroup per input n of x [N, C, HW]. Channel
// means, logits = weight [K, C] · means + bias, then in training Gumbel noise
// g = -ln(-ln(u)) with u = (rng24(seed, stream, n·K + k) + 1/2) / 2^24, z = (logits + g) / tau,
// probs = softmax(z), choice = argmax z (the first maximum), and counts[choice] += 1; in
// evaluation z = logits / tau and nothing is counted. GateParams: gate_params.wgsl.

@group(0) @binding(0) var<uniform> p: GateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> means: array<f32>;
@group(0) @binding(5) var<storage, read_write> probs: array<f32>;
@group(0) @binding(6) var<storage, read_write> choice: array<u32>;
@group(0) @binding(7) var<storage, read_write> counts: array<atomic<u32>>;

var<workgroup> z: array<f32, 4>;

@compute @workgroup_size(256)
fn gate_forward(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let n = wg.y * nwg.x + wg.x;
    if (n >= p.n) { return; }
    for (var c = lid; c < p.c; c += 256u) {
        let base = (n * p.c + c) * p.hw;
        var s = 0.0;
        for (var i = 0u; i < p.hw; i++) {
            s += x[base + i];
        }
        means[n * p.c + c] = s / f32(p.hw);
    }
    storageBarrier();
    if (lid < p.k) {
        var logit = bias[lid];
        for (var c = 0u; c < p.c; c++) {
            logit += weight[lid * p.c + c] * means[n * p.c + c];
        }
        if (p.train != 0u) {
            let u = (f32(rng24(p.seed, p.stream, n * p.k + lid)) + 0.5) * (1.0 / 16777216.0);
            logit += -log(-log(u));
        }
        z[lid] = logit / p.tau;
    }
    workgroupBarrier();
    if (lid == 0u) {
        var best = 0u;
        for (var k = 1u; k < p.k; k++) {
            if (z[k] > z[best]) { best = k; }
        }
        var total = 0.0;
        for (var k = 0u; k < p.k; k++) {
            total += exp(z[k] - z[best]);
        }
        for (var k = 0u; k < p.k; k++) {
            probs[n * p.k + k] = exp(z[k] - z[best]) / total;
        }
        choice[n] = best;
        if (p.train != 0u) {
            atomicAdd(&counts[best], 1u);
        }
    }
}
