// Tiled matrix products of the engine: C[M][N] = sum_k A(m, k) B(k, n) for linear layers and for
// conv2d as an implicit GEMM (forward, input gradient, weight gradient; no im2col buffer).
// A workgroup of 256 computes a 64x64 tile of C, 4x4 values per invocation, walking K in steps
// of 16 through workgroup memory. Grid: x = tile of N, y = tile of M, z = split of K (the weight
// gradient's K is batch*OH*OW; its partial sums are added in order by `reduce_splits`).
// Each invocation loads one k row of both operand tiles (4 consecutive m of A, 4 consecutive n
// of B): index arithmetic per column is done once, per k once per step.

struct GemmParams {
    m: u32, n: u32, k: u32, k_split: u32,
    batch: u32, cin: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, ksize: u32,
    stride: u32, pad: u32, has_bias: u32, splits: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
}

@group(0) @binding(0) var<uniform> p: GemmParams;
@group(0) @binding(1) var<storage, read> a_buf: array<f32>;
@group(0) @binding(2) var<storage, read> b_buf: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c_buf: array<f32>;

const TILE: u32 = 64u;
const BK: u32 = 16u;
const STRIDED: u32 = 0u; // A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn], C row-major
const CONV_FWD: u32 = 1u; // A = weights [cout][cin*k*k], B = input patches, C = y [b][cout][oh][ow]
const CONV_DATA: u32 = 2u; // A = weights seen as [cin][cout*k*k], B = dy gathered, C = dx
const CONV_WEIGHT: u32 = 3u; // A = dy [cout][(b,oy,ox)], B = input patches [(b,oy,ox)][(ci,ky,kx)]

var<workgroup> As: array<vec4<f32>, 256>; // [BK][TILE/4]
var<workgroup> Bs: array<vec4<f32>, 256>;

fn in_plane(y: i32, x: i32, h: u32, w: u32) -> bool {
    return y >= 0 && x >= 0 && u32(y) < h && u32(x) < w;
}

fn gemm(mode: u32, wid: vec3<u32>, tid: u32) {
    let m0 = wid.y * TILE;
    let n0 = wid.x * TILE;
    let kbeg = wid.z * p.k_split;
    let kend = min(p.k, kbeg + p.k_split);
    let lk = tid / 16u;
    let l4 = (tid % 16u) * 4u;
    let hw = p.h * p.w;
    let ohw = p.oh * p.ow;
    let kk2 = p.ksize * p.ksize;
    let s = i32(p.stride);
    let pad = i32(p.pad);

    // Per loaded column j: what the loaders need, computed once.
    var ra: array<u32, 4>;
    var rb0: array<u32, 4>;
    var rb1: array<i32, 4>;
    var rb2: array<i32, 4>;
    var va: array<bool, 4>;
    var vb: array<bool, 4>;
    for (var j = 0u; j < 4u; j++) {
        let m = m0 + l4 + j;
        let n = n0 + l4 + j;
        va[j] = m < p.m;
        vb[j] = n < p.n;
        if (mode == STRIDED) {
            ra[j] = m * p.sam;
            rb0[j] = n * p.sbn;
        } else if (mode == CONV_FWD) {
            ra[j] = m * p.k;
            let b = n / ohw;
            let r = n % ohw;
            rb0[j] = b * p.cin * hw;
            rb1[j] = i32(r / p.ow) * s - pad;
            rb2[j] = i32(r % p.ow) * s - pad;
        } else if (mode == CONV_DATA) {
            ra[j] = m;
            let b = n / hw;
            let r = n % hw;
            rb0[j] = b * p.cout * ohw;
            rb1[j] = i32(r / p.w) + pad;
            rb2[j] = i32(r % p.w) + pad;
        } else {
            ra[j] = m;
            let ci = n / kk2;
            let r = n % kk2;
            rb0[j] = ci * hw;
            rb1[j] = i32(r / p.ksize) - pad;
            rb2[j] = i32(r % p.ksize) - pad;
        }
    }

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let ty = tid / 16u;
    let tx = tid % 16u;
    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        let k = k0 + lk;
        var av = vec4<f32>(0.0);
        var bv = vec4<f32>(0.0);
        if (k < kend) {
            if (mode == STRIDED) {
                for (var j = 0u; j < 4u; j++) {
                    if (va[j]) { av[j] = a_buf[ra[j] + k * p.sak]; }
                    if (vb[j]) { bv[j] = b_buf[k * p.sbk + rb0[j]]; }
                }
            } else if (mode == CONV_FWD) {
                let ci = k / kk2;
                let r = k % kk2;
                let ky = i32(r / p.ksize);
                let kx = i32(r % p.ksize);
                for (var j = 0u; j < 4u; j++) {
                    if (va[j]) { av[j] = a_buf[ra[j] + k]; }
                    let y = rb1[j] + ky;
                    let x = rb2[j] + kx;
                    if (vb[j] && in_plane(y, x, p.h, p.w)) {
                        bv[j] = b_buf[rb0[j] + ci * hw + u32(y) * p.w + u32(x)];
                    }
                }
            } else if (mode == CONV_DATA) {
                let co = k / kk2;
                let r = k % kk2;
                let ky = i32(r / p.ksize);
                let kx = i32(r % p.ksize);
                for (var j = 0u; j < 4u; j++) {
                    if (va[j]) { av[j] = a_buf[(co * p.cin + ra[j]) * kk2 + r]; }
                    let ty2 = rb1[j] - ky;
                    let tx2 = rb2[j] - kx;
                    if (vb[j] && ty2 >= 0 && tx2 >= 0 && ty2 % s == 0 && tx2 % s == 0) {
                        let oy = u32(ty2 / s);
                        let ox = u32(tx2 / s);
                        if (oy < p.oh && ox < p.ow) {
                            bv[j] = b_buf[rb0[j] + co * ohw + oy * p.ow + ox];
                        }
                    }
                }
            } else {
                let b = k / ohw;
                let r = k % ohw;
                let oy = i32(r / p.ow) * s;
                let ox = i32(r % p.ow) * s;
                for (var j = 0u; j < 4u; j++) {
                    if (va[j]) { av[j] = a_buf[(b * p.cout + ra[j]) * ohw + r]; }
                    let y = oy + rb1[j];
                    let x = ox + rb2[j];
                    if (vb[j] && in_plane(y, x, p.h, p.w)) {
                        bv[j] = b_buf[b * p.cin * hw + rb0[j] + u32(y) * p.w + u32(x)];
                    }
                }
            }
        }
        As[lk * 16u + tid % 16u] = av;
        Bs[lk * 16u + tid % 16u] = bv;
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a = As[kk * 16u + ty];
            let b = Bs[kk * 16u + tx];
            acc0 += a.x * b;
            acc1 += a.y * b;
            acc2 += a.z * b;
            acc3 += a.w * b;
        }
        workgroupBarrier();
    }
    store_row(mode, wid.z, m0 + ty * 4u, n0 + tx * 4u, acc0);
    store_row(mode, wid.z, m0 + ty * 4u + 1u, n0 + tx * 4u, acc1);
    store_row(mode, wid.z, m0 + ty * 4u + 2u, n0 + tx * 4u, acc2);
    store_row(mode, wid.z, m0 + ty * 4u + 3u, n0 + tx * 4u, acc3);
}

fn store_row(mode: u32, split: u32, m: u32, n0: u32, v: vec4<f32>) {
    if (m >= p.m) { return; }
    for (var j = 0u; j < 4u; j++) {
        let n = n0 + j;
        if (n >= p.n) { return; }
        var x = v[j];
        if (mode == CONV_FWD) {
            let b = n / (p.oh * p.ow);
            let r = n % (p.oh * p.ow);
            if (p.has_bias != 0u) { x += bias[m]; }
            c_buf[(b * p.cout + m) * p.oh * p.ow + r] = x;
        } else if (mode == CONV_DATA) {
            let b = n / (p.h * p.w);
            let r = n % (p.h * p.w);
            c_buf[(b * p.cin + m) * p.h * p.w + r] = x;
        } else {
            if (mode == STRIDED && p.has_bias != 0u && split == 0u) { x += bias[n]; }
            c_buf[(split * p.m + m) * p.n + n] = x;
        }
    }
}

@compute @workgroup_size(256)
fn matmul_strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(STRIDED, wid, tid);
}

@compute @workgroup_size(256)
fn conv_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_FWD, wid, tid);
}

@compute @workgroup_size(256)
fn conv_backward_data(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_DATA, wid, tid);
}

@compute @workgroup_size(256)
fn conv_backward_weight(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    gemm(CONV_WEIGHT, wid, tid);
}

// c[i] = sum over splits z of a[z*M*N + i], in split order (deterministic).
@compute @workgroup_size(256)
fn reduce_splits(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.x + gid.y * nw.x * 256u;
    let mn = p.m * p.n;
    if (i >= mn) { return; }
    var acc = 0.0;
    for (var z = 0u; z < p.splits; z++) {
        acc += a_buf[z * mn + i];
    }
    c_buf[i] = acc;
}
