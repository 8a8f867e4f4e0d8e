// The abs-max of a GEMM's two operands for `gemm_coop.wgsl`'s power-of-two scales, in one
// dispatch: the first `groups_a` workgroups take max |a| over the first `len_a` values of `a`
// into `scales[0]`, the rest max |b| over the first `len_b` of `b` into `scales[1]`, as bits
// (a non-negative f32 orders like its bits as u32) combined with atomicMax (exact and
// order-independent, so deterministic). The host clears `scales` before the dispatch. NaN counts
// as larger than every number.

struct ScaleParams { len_a: u32, len_b: u32, groups_a: u32, _a: u32 }

@group(0) @binding(0) var<uniform> q: ScaleParams;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> scales: array<atomic<u32>>;

var<workgroup> M: array<u32, 256>;

@compute @workgroup_size(256)
fn absmax(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let on_b = wg.x >= q.groups_a;
    var m = 0u;
    if (on_b) {
        let threads = (nw.x - q.groups_a) * 256u;
        for (var i = (wg.x - q.groups_a) * 256u + lid; i < q.len_b; i += threads) {
            m = max(m, bitcast<u32>(abs(b[i])));
        }
    } else {
        let threads = q.groups_a * 256u;
        for (var i = wg.x * 256u + lid; i < q.len_a; i += threads) { m = max(m, bitcast<u32>(abs(a[i]))); }
    }
    M[lid] = m;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { M[lid] = max(M[lid], M[lid + s]); }
        workgroupBarrier();
    }
    if (lid == 0u) { atomicMax(&scales[u32(on_b)], M[0]); }
}

// Test probe of `scale_exp` and `unscale`: for each of the first `len_a` values of `a`, the scale
// exponent of |x| and x * 2^t with t = bitcast<i32>(len_b), as bits in scales[2i] and scales[2i + 1].
@compute @workgroup_size(64)
fn scale_probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= q.len_a) { return; }
    atomicStore(&scales[2u * i], bitcast<u32>(scale_exp(bitcast<u32>(abs(a[i])))));
    atomicStore(&scales[2u * i + 1u], bitcast<u32>(unscale(a[i], bitcast<i32>(q.len_b))));
}
