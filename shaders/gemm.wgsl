// Tiled matrix products of the engine: C[M][N] = sum_k A(m, k) B(k, n) for linear layers and for
// conv2d as an implicit GEMM (forward, input gradient, weight gradient; no im2col buffer).
// A workgroup of 64 computes a 16x64 tile of C: each invocation one column n and 16 rows m.
// K is walked in steps of 16; the 16x16 A tile of each step is staged in workgroup memory by all
// 64 invocations and then read at addresses that are the same for the whole workgroup (a
// broadcast on GPUs; one scalar load instead of a per-lane gather on lavapipe), while each
// invocation reads its own B values. Grid: x = tile of N, y = tile of M, z = split of K (the
// weight gradient's K is batch*OH*OW; its partial sums are added in order by `reduce_splits`).

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

const TM: u32 = 16u; // rows of C per workgroup
const TN: u32 = 64u; // columns of C per workgroup: one per invocation
const BK: u32 = 16u;
const STRIDED: u32 = 0u; // A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn], C row-major
const CONV_FWD: u32 = 1u; // A = weights [cout][cin*k*k], B = input patches, C = y [b][cout][oh][ow]
const CONV_DATA: u32 = 2u; // A = weights seen as [cin][cout*k*k], B = dy gathered, C = dx
const CONV_WEIGHT: u32 = 3u; // A = dy [cout][(b,oy,ox)], B = input patches [(b,oy,ox)][(ci,ky,kx)]

var<workgroup> As: array<vec4<f32>, 64>; // [BK][TM/4]: the A tile, read uniformly

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
    let n = wid.x * TN + tid;
    let kbeg = wid.z * p.k_split;
    let kend = min(p.k, kbeg + p.k_split);
    // The A tile's loads: invocation tid loads rows (tid % 4)*4 .. +4 at k row tid / 4.
    let la = col_info(mode, m0 + (tid % 4u) * 4u, 0u);
    let lb = col_info(mode, m0 + (tid % 4u) * 4u + 1u, 0u);
    let lc = col_info(mode, m0 + (tid % 4u) * 4u + 2u, 0u);
    let ld = col_info(mode, m0 + (tid % 4u) * 4u + 3u, 0u);
    let col = col_info(mode, 0u, n);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = kbeg; k0 < kend; k0 += BK) {
        let k = k0 + tid / 4u;
        var av = vec4<f32>(0.0);
        if (k < kend) {
            let ki = k_info(mode, k);
            av = vec4<f32>(load_a(mode, la, ki), load_a(mode, lb, ki), load_a(mode, lc, ki), load_a(mode, ld, ki));
        }
        As[tid] = av;
        workgroupBarrier();
        let steps = min(BK, kend - k0);
        for (var kk = 0u; kk < steps; kk++) {
            // Uniform across the workgroup: the A values are broadcast, B is one load per invocation.
            let b = load_b(mode, col, k_info(mode, k0 + kk));
            acc0 += As[kk * 4u] * b;
            acc1 += As[kk * 4u + 1u] * b;
            acc2 += As[kk * 4u + 2u] * b;
            acc3 += As[kk * 4u + 3u] * b;
        }
        workgroupBarrier();
    }
    store_col(mode, wid.z, m0, n, acc0);
    store_col(mode, wid.z, m0 + 4u, n, acc1);
    store_col(mode, wid.z, m0 + 8u, n, acc2);
    store_col(mode, wid.z, m0 + 12u, n, acc3);
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

// Rows m .. m+3 of column n.
fn store_col(mode: u32, split: u32, m: u32, n: u32, v: vec4<f32>) {
    store_one(mode, split, m, n, v.x);
    store_one(mode, split, m + 1u, n, v.y);
    store_one(mode, split, m + 2u, n, v.z);
    store_one(mode, split, m + 3u, n, v.w);
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
