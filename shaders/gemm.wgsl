// Tiled matrix products of the engine: C[M][N] = sum_k A(m, k) B(k, n) for linear layers and for
// conv2d as an implicit GEMM (forward, input gradient, weight gradient; no im2col buffer).
// A workgroup of 64 computes a 64x64 tile of C, 8x8 values per invocation (register blocking:
// 4 vec4 reads of workgroup memory feed 64 FMAs), walking K in steps of 8: each step's 64x8 A and
// 8x64 B tiles are staged in workgroup memory by all 64 invocations. Grid: x = tile of N, y = tile
// of M, z = split of K (the weight gradient's K is batch*OH*OW; its partial sums are added in
// order by `reduce_splits`). Index arithmetic per loaded column is done once, per k once.

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

const TM: u32 = 64u; // rows of C per workgroup
const TN: u32 = 64u; // columns of C per workgroup
const BK: u32 = 8u;
const STRIDED: u32 = 0u; // A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn], C row-major
const CONV_FWD: u32 = 1u; // A = weights [cout][cin*k*k], B = input patches, C = y [b][cout][oh][ow]
const CONV_DATA: u32 = 2u; // A = weights seen as [cin][cout*k*k], B = dy gathered, C = dx
const CONV_WEIGHT: u32 = 3u; // A = dy [cout][(b,oy,ox)], B = input patches [(b,oy,ox)][(ci,ky,kx)]

var<workgroup> As: array<vec4<f32>, 128>; // [BK][TM/4]
var<workgroup> Bs: array<vec4<f32>, 128>; // [BK][TN/4]

fn in_plane(y: i32, x: i32, h: u32, w: u32) -> bool {
    return y >= 0 && x >= 0 && u32(y) < h && u32(x) < w;
}

// What an invocation's loaders need about one of its 4 columns, computed once.
struct Col {
    ra: u32, rb0: u32, rb1: i32, rb2: i32, va: bool, vb: bool,
}

fn col_info(mode: u32, m: u32, n: u32) -> Col {
    var c: Col;
    c.va = m < p.m;
    c.vb = n < p.n;
    let hw = p.h * p.w;
    let ohw = p.oh * p.ow;
    let kk2 = p.ksize * p.ksize;
    let s = i32(p.stride);
    let pad = i32(p.pad);
    if (mode == STRIDED) {
        c.ra = m * p.sam;
        c.rb0 = n * p.sbn;
    } else if (mode == CONV_FWD) {
        c.ra = m * p.k;
        let r = n % ohw;
        c.rb0 = (n / ohw) * p.cin * hw;
        c.rb1 = i32(r / p.ow) * s - pad;
        c.rb2 = i32(r % p.ow) * s - pad;
    } else if (mode == CONV_DATA) {
        c.ra = m;
        let r = n % hw;
        c.rb0 = (n / hw) * p.cout * ohw;
        c.rb1 = i32(r / p.w) + pad;
        c.rb2 = i32(r % p.w) + pad;
    } else {
        c.ra = m;
        let r = n % kk2;
        c.rb0 = (n / kk2) * hw;
        c.rb1 = i32(r / p.ksize) - pad;
        c.rb2 = i32(r % p.ksize) - pad;
    }
    return c;
}

// Per-k values shared by the loads of one step: (k, ci|co|b, tap or position).
struct KInfo { k: u32, q: u32, r: u32, ky: i32, kx: i32 }

fn k_info(mode: u32, k: u32) -> KInfo {
    var ki: KInfo;
    ki.k = k;
    if (mode == CONV_FWD || mode == CONV_DATA) {
        let kk2 = p.ksize * p.ksize;
        ki.q = k / kk2;
        ki.r = k % kk2;
        ki.ky = i32(ki.r / p.ksize);
        ki.kx = i32(ki.r % p.ksize);
    } else if (mode == CONV_WEIGHT) {
        let ohw = p.oh * p.ow;
        ki.q = k / ohw;
        ki.r = k % ohw;
        ki.ky = i32(ki.r / p.ow) * i32(p.stride);
        ki.kx = i32(ki.r % p.ow) * i32(p.stride);
    }
    return ki;
}

fn load_a(mode: u32, c: Col, ki: KInfo) -> f32 {
    if (!c.va) { return 0.0; }
    if (mode == STRIDED) { return a_buf[c.ra + ki.k * p.sak]; }
    if (mode == CONV_FWD) { return a_buf[c.ra + ki.k]; }
    if (mode == CONV_DATA) { return a_buf[(ki.q * p.cin + c.ra) * p.ksize * p.ksize + ki.r]; }
    return a_buf[(ki.q * p.cout + c.ra) * p.oh * p.ow + ki.r];
}

fn load_b(mode: u32, c: Col, ki: KInfo) -> f32 {
    if (!c.vb) { return 0.0; }
    if (mode == STRIDED) { return b_buf[ki.k * p.sbk + c.rb0]; }
    if (mode == CONV_FWD) {
        let y = c.rb1 + ki.ky;
        let x = c.rb2 + ki.kx;
        if (!in_plane(y, x, p.h, p.w)) { return 0.0; }
        return b_buf[c.rb0 + ki.q * p.h * p.w + u32(y) * p.w + u32(x)];
    }
    if (mode == CONV_DATA) {
        let s = i32(p.stride);
        let ty = c.rb1 - ki.ky;
        let tx = c.rb2 - ki.kx;
        if (ty < 0 || tx < 0 || ty % s != 0 || tx % s != 0) { return 0.0; }
        let oy = u32(ty / s);
        let ox = u32(tx / s);
        if (oy >= p.oh || ox >= p.ow) { return 0.0; }
        return b_buf[c.rb0 + ki.q * p.oh * p.ow + oy * p.ow + ox];
    }
    let y = ki.ky + c.rb1;
    let x = ki.kx + c.rb2;
    if (!in_plane(y, x, p.h, p.w)) { return 0.0; }
    return b_buf[ki.q * p.cin * p.h * p.w + c.rb0 + u32(y) * p.w + u32(x)];
}

fn gemm(mode: u32, wid: vec3<u32>, tid: u32) {
    let m0 = wid.y * TM;
    let n0 = wid.x * TN;
    let kbeg = wid.z * p.k_split;
    let kend = min(p.k, kbeg + p.k_split);
    // Loads: invocation tid fills 4 consecutive rows (A) and columns (B) at two k rows.
    let l4 = (tid % 16u) * 4u;
    let lk = tid / 16u;
    let a0i = col_info(mode, m0 + l4, n0 + l4);
    let a1i = col_info(mode, m0 + l4 + 1u, n0 + l4 + 1u);
    let a2i = col_info(mode, m0 + l4 + 2u, n0 + l4 + 2u);
    let a3i = col_info(mode, m0 + l4 + 3u, n0 + l4 + 3u);
    // Compute: invocation (ty, tx) owns rows ty*8 .. +8 and columns tx*8 .. +8.
    let ty = tid / 8u;
    let tx = tid % 8u;
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
    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        for (var half = 0u; half < 2u; half++) {
            let kr = lk + half * 4u;
            let k = k0 + kr;
            var av = vec4<f32>(0.0);
            var bv = vec4<f32>(0.0);
            if (k < kend) {
                let ki = k_info(mode, k);
                av = vec4<f32>(load_a(mode, a0i, ki), load_a(mode, a1i, ki), load_a(mode, a2i, ki), load_a(mode, a3i, ki));
                bv = vec4<f32>(load_b(mode, a0i, ki), load_b(mode, a1i, ki), load_b(mode, a2i, ki), load_b(mode, a3i, ki));
            }
            As[kr * 16u + tid % 16u] = av;
            Bs[kr * 16u + tid % 16u] = bv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a0 = As[kk * 16u + ty * 2u];
            let a1 = As[kk * 16u + ty * 2u + 1u];
            let b0 = Bs[kk * 16u + tx * 2u];
            let b1 = Bs[kk * 16u + tx * 2u + 1u];
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
    store_col8(mode, wid.z, m0 + ty * 8u + 0u, n0 + tx * 8u, c00, c01);
    store_col8(mode, wid.z, m0 + ty * 8u + 1u, n0 + tx * 8u, c10, c11);
    store_col8(mode, wid.z, m0 + ty * 8u + 2u, n0 + tx * 8u, c20, c21);
    store_col8(mode, wid.z, m0 + ty * 8u + 3u, n0 + tx * 8u, c30, c31);
    store_col8(mode, wid.z, m0 + ty * 8u + 4u, n0 + tx * 8u, c40, c41);
    store_col8(mode, wid.z, m0 + ty * 8u + 5u, n0 + tx * 8u, c50, c51);
    store_col8(mode, wid.z, m0 + ty * 8u + 6u, n0 + tx * 8u, c60, c61);
    store_col8(mode, wid.z, m0 + ty * 8u + 7u, n0 + tx * 8u, c70, c71);
}

// Row m, columns n .. n+7.
fn store_col8(mode: u32, split: u32, m: u32, n: u32, lo: vec4<f32>, hi: vec4<f32>) {
    store_one(mode, split, m, n, lo.x);
    store_one(mode, split, m, n + 1u, lo.y);
    store_one(mode, split, m, n + 2u, lo.z);
    store_one(mode, split, m, n + 3u, lo.w);
    store_one(mode, split, m, n + 4u, hi.x);
    store_one(mode, split, m, n + 5u, hi.y);
    store_one(mode, split, m, n + 6u, hi.z);
    store_one(mode, split, m, n + 7u, hi.w);
}

fn store_one(mode: u32, split: u32, m: u32, n: u32, v: f32) {
    if (m >= p.m || n >= p.n) { return; }
    var x = v;
    if (mode == CONV_FWD) {
        let ohw = p.oh * p.ow;
        if (p.has_bias != 0u) { x += bias[m]; }
        c_buf[((n / ohw) * p.cout + m) * ohw + n % ohw] = x;
    } else if (mode == CONV_DATA) {
        let hw = p.h * p.w;
        c_buf[((n / hw) * p.cin + m) * hw + n % hw] = x;
    } else {
        if (mode == STRIDED && p.has_bias != 0u && split == 0u) { x += bias[n]; }
        c_buf[(split * p.m + m) * p.n + n] = x;
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
