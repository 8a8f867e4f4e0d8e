// The abs-max of a GEMM operand for `gemm_coop.wgsl`'s power-of-two scales: max |x| over the
// first `len` values of `x`, as bits (a non-negative f32 orders like its bits as u32), combined
// into `scales[slot]` with atomicMax (exact and order-independent, so deterministic). The host
// clears `scales` before the first dispatch. NaN counts as larger than every number.

struct ScaleParams { len: u32, slot: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<uniform> q: ScaleParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> scales: array<atomic<u32>>;

var<workgroup> M: array<u32, 256>;

@compute @workgroup_size(256)
fn absmax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let threads = nw.x * nw.y * 256u;
    var m = 0u;
    for (var i = (wg.y * nw.x + wg.x) * 256u + lid; i < q.len; i += threads) {
        m = max(m, bitcast<u32>(abs(x[i])));
    }
    M[lid] = m;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { M[lid] = max(M[lid], M[lid + s]); }
        workgroupBarrier();
    }
    if (lid == 0u) { atomicMax(&scales[q.slot], M[0]); }
}

// Test probe of `scale_exp` and `unscale`: for each of the first `len` values, the scale exponent
// of |x| and x * 2^t with t = bitcast<i32>(slot), as bits in scales[2i] and scales[2i + 1].
@compute @workgroup_size(64)
fn scale_probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= q.len) { return; }
    atomicStore(&scales[2u * i], bitcast<u32>(scale_exp(bitcast<u32>(abs(x[i])))));
    atomicStore(&scales[2u * i + 1u], bitcast<u32>(unscale(x[i], bitcast<i32>(q.slot))));
}
