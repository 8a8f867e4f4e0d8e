// Fake quantization for quantized-compute simulation (src/reference/fakequant.rs): asymmetric
// per-tensor min/max, quantize then dequantize into a new tensor. Three dispatches share one
// binding set: `minmax_partial` (up to 256 workgroups, each a strided slice, to partial pairs),
// `minmax_final` (one workgroup, partials to scratch[512..514]) and `fake_quant` (one invocation
// per value, nearest or stochastic rounding from the counter-based RNG of rng.wgsl). With
// `per_sample` > 0 the bits vary per input: value i takes opts[choice[i / per_sample]] (DFQ).
// min/max are exact whatever the order, so the result is deterministic.

struct FqParams {
    n: u32, bits: u32, seed: u32, stream: u32, stochastic: u32, partials: u32, per_sample: u32, _b: u32,
    opts: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: FqParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> scratch: array<f32>;
@group(0) @binding(4) var<storage, read> choice: array<u32>;

var<workgroup> wmin: array<f32, 256>;
var<workgroup> wmax: array<f32, 256>;

// Tree reduction of the workgroup's (wmin, wmax) into slot 0.
fn reduce_workgroup(lid: u32) {
    for (var s = 128u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lid < s) {
            wmin[lid] = min(wmin[lid], wmin[lid + s]);
            wmax[lid] = max(wmax[lid], wmax[lid + s]);
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn minmax_partial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // x[0] is a value of the tensor (n > 0), so it is a neutral start for min and max.
    var lo = x[0];
    var hi = x[0];
    let stride = p.partials * 256u;
    for (var i = wg.x * 256u + lid; i < p.n; i += stride) {
        lo = min(lo, x[i]);
        hi = max(hi, x[i]);
    }
    wmin[lid] = lo;
    wmax[lid] = hi;
    reduce_workgroup(lid);
    if (lid == 0u) {
        scratch[2u * wg.x] = wmin[0];
        scratch[2u * wg.x + 1u] = wmax[0];
    }
}

@compute @workgroup_size(256)
fn minmax_final(@builtin(local_invocation_index) lid: u32) {
    // Partial 0 always exists; lanes past the partials repeat it.
    var lo = scratch[0];
    var hi = scratch[1];
    if (lid < p.partials) {
        lo = scratch[2u * lid];
        hi = scratch[2u * lid + 1u];
    }
    wmin[lid] = lo;
    wmax[lid] = hi;
    reduce_workgroup(lid);
    if (lid == 0u) {
        scratch[512] = wmin[0];
        scratch[513] = wmax[0];
    }
}

// y = mn + clamp(floor((x - mn) * levels / range + u), 0, levels) * range / levels, with u = 1/2
// (nearest) or rng24 / 2^24 (stochastic); a constant tensor is copied.
@compute @workgroup_size(256)
fn fake_quant(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * nwg.x + wg.x) * 256u + lid;
    if (i >= p.n) { return; }
    let mn = scratch[512];
    let range = scratch[513] - mn;
    let v = x[i];
    if (!(range > 0.0)) {
        y[i] = v;
        return;
    }
    var bits = p.bits;
    if (p.per_sample != 0u) {
        bits = p.opts[choice[i / p.per_sample]];
    }
    let levels = f32((1u << bits) - 1u);
    let inv = levels / range;
    let step = range / levels;
    var u = 0.5;
    if (p.stochastic != 0u) {
        u = f32(rng24(p.seed, p.stream, i)) * (1.0 / 16777216.0);
    }
    let q = clamp(floor((v - mn) * inv + u), 0.0, levels);
    y[i] = mn + q * step;
}
