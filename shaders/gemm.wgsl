// Tiled matrix products of the engine: C[M][N] = sum_k A(m, k) B(k, n) for linear layers and for
// conv2d as an implicit GEMM (forward, input gradient, weight gradient; no im2col buffer).
// A workgroup of 64 computes a TM x TN tile of C (TM = 16, 32 or 64 from the pipeline constant,
// TN = 4096 / TM, so a skinny product does not pad its short side to 64), 8x8 values per
// invocation (register blocking: 4 vec4 reads of workgroup memory feed 64 FMAs), walking K in
// steps of 8. Each step's TMx8 A and 8xTN B tiles are staged in workgroup memory: A with
// consecutive invocations on consecutive k (4 rows per vec4; rows are padded by one vec4 so the
// stores do not collide), B with consecutive invocations on consecutive columns, so the loads of
// a warp fall on adjacent addresses wherever the operand is contiguous. The 8 k of a step are
// decoded once per workgroup (by 8 invocations, while the others compute) into `Kd`.
// Grid: x = tile of N, y = tile of M, z = split of K. With more than one split each split writes
// its partial C to a workspace slice and `reduce_splits` adds the slices in a fixed order
// (deterministic: no atomics). The operand addressing and the stores of C are `gemm_addr.wgsl`,
// prepended by the shader registry.

override TM: u32 = 64u; // rows of C per workgroup: 16, 32 or 64
override TN: u32 = 4096u / TM; // columns of C per workgroup
override AROW: u32 = TM / 4u + 1u; // vec4 slots per k row of the A tile (one of padding)
override AW: u32 = 8u * AROW;
override BW: u32 = 2u * TN;
const BK: u32 = 8u;

var<workgroup> As: array<vec4<f32>, AW>; // [BK][AROW], 4 rows per vec4
var<workgroup> Bs: array<vec4<f32>, BW>; // [BK][TN/4], 4 columns per vec4
var<workgroup> Kd: array<vec4<i32>, 8>; // the step's k decoded: (q, r, ky, kx)
var<workgroup> R: array<f32, 256>; // reduce_splits

// Stages the A and B tiles of the step starting at k0 (k >= kend loads zeros). Each decoded k
// is read from `Kd` once per invocation and step.
fn load_tiles(mode: u32, m0: u32, k0: u32, kend: u32, tid: u32, cols: array<Col, 4>) {
    // A: 2*TM vec4 slots, slot v = (k row v % 8, rows 4*(v / 8) ..); v % 8 = tid % 8.
    let ka = tid % BK;
    let kda = Kd[ka];
    for (var v = tid; v < 2u * TM; v += 64u) {
        let k = k0 + ka;
        var av = vec4<f32>(0.0);
        if (k < kend) {
            let m = m0 + (v / BK) * 4u;
            av = vec4<f32>(load_a(mode, m, k, kda), load_a(mode, m + 1u, k, kda), load_a(mode, m + 2u, k, kda),
                           load_a(mode, m + 3u, k, kda));
        }
        As[ka * AROW + v / BK] = av;
    }
    // B: columns tid + 64 j of the tile at all 8 k rows.
    for (var kr = 0u; kr < BK; kr++) {
        let k = k0 + kr;
        let kd = Kd[kr];
        for (var j = 0u; j < TN / 64u; j++) {
            let n = tid + 64u * j;
            var bv = 0.0;
            if (k < kend) { bv = load_b(mode, cols[j], k, kd); }
            Bs[(kr * TN + n) / 4u][n % 4u] = bv;
        }
    }
}

fn gemm(mode: u32, wid: vec3<u32>, tid: u32) {
    let m0 = wid.y * TM;
    let n0 = wid.x * TN;
    let kbeg = wid.z * p.k_split;
    let kend = min(p.k, kbeg + p.k_split);
    var cols: array<Col, 4>;
    for (var j = 0u; j < TN / 64u; j++) {
        cols[j] = col_info(mode, n0 + tid + 64u * j);
    }
    // Compute: invocation (ty, tx) owns rows ty*8 .. +8 and columns tx*8 .. +8.
    let ty = tid / (TN / 8u);
    let tx = tid % (TN / 8u);
    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);
    if (tid < BK) { Kd[tid] = k_decode(mode, kbeg + tid); }
    workgroupBarrier();
    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        load_tiles(mode, m0, k0, kend, tid, cols);
        workgroupBarrier();
        // The loads have read Kd: decode the next step's k while the tile is multiplied.
        if (tid < BK) { Kd[tid] = k_decode(mode, k0 + BK + tid); }
        for (var kk = 0u; kk < BK; kk++) {
            let a0 = As[kk * AROW + ty * 2u];
            let a1 = As[kk * AROW + ty * 2u + 1u];
            let b0 = Bs[kk * (TN / 4u) + tx * 2u];
            let b1 = Bs[kk * (TN / 4u) + tx * 2u + 1u];
            c00 += a0.x * b0;
            c01 += a0.x * b1;
            c10 += a0.y * b0;
            c11 += a0.y * b1;
            c20 += a0.z * b0;
            c21 += a0.z * b1;
            c30 += a0.w * b0;
            c31 += a0.w * b1;
            c40 += a1.x * b0;
            c41 += a1.x * b1;
            c50 += a1.y * b0;
            c51 += a1.y * b1;
            c60 += a1.z * b0;
            c61 += a1.z * b1;
            c70 += a1.w * b0;
            c71 += a1.w * b1;
        }
        workgroupBarrier();
    }
    // The 8x8 values in loops, not unrolled: a software adapter builds every GEMM pipeline before
    // a browser's first step, and 64 inlined stores were most of each one's code.
    var acc = array<vec4<f32>, 16>(c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71);
    for (var r = 0u; r < 8u; r++) {
        for (var c = 0u; c < 8u; c++) {
            store_one(mode, wid.z, m0 + ty * 8u + r, n0 + tx * 8u + c, acc[2u * r + c / 4u][c % 4u]);
        }
    }
}

@compute @workgroup_size(64)
fn matmul_strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(STRIDED, wid, tid);
}

@compute @workgroup_size(64)
fn conv_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_FWD, wid, tid);
}

@compute @workgroup_size(64)
fn conv_backward_data(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_DATA, wid, tid);
}

@compute @workgroup_size(64)
fn conv_backward_weight(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_WEIGHT, wid, tid);
}

// c[i] = sum over splits z of a[z*M*N + i]. A workgroup covers 256 / lanes outputs; lane l of an
// output sums splits l, l + lanes, … in order, then the lanes are added in a fixed tree.
@compute @workgroup_size(256)
fn reduce_splits(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let outs = 256u / p.lanes;
    let i = (wg.y * nw.x + wg.x) * outs + lid % outs;
    let lane = lid / outs;
    let mn = p.m * p.n;
    var acc = 0.0;
    if (i < mn) {
        for (var z = lane; z < p.splits; z += p.lanes) {
            acc += a_buf[z * mn + i];
        }
    }
    R[lid] = acc;
    workgroupBarrier();
    for (var s = p.lanes / 2u; s > 0u; s >>= 1u) {
        if (lane < s) { R[lid] += R[lid + s * outs]; }
        workgroupBarrier();
    }
    if (lane == 0u && i < mn) { c_buf[i] = R[lid]; }
}
