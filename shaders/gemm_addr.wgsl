// The operand addressing shared by the GEMM kernels (`gemm.wgsl` in f32, `gemm_coop.wgsl` with
// cooperative matrices): parameters, bindings 0-4, A(m, k) and B(k, n) of the four kinds of
// product (strided, conv forward, conv input gradient, conv weight gradient) and where C(m, n)
// goes (output layout, bias, split-K slices).

struct GemmParams {
    m: u32, n: u32, k: u32, k_split: u32,
    batch: u32, cin: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, ksize: u32,
    stride: u32, pad: u32, has_bias: u32, splits: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
    lanes: u32, _a: u32, _b: u32, _c: u32,
}

@group(0) @binding(0) var<uniform> p: GemmParams;
@group(0) @binding(1) var<storage, read> a_buf: array<f32>;
@group(0) @binding(2) var<storage, read> b_buf: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c_buf: array<f32>;

const STRIDED: u32 = 0u; // A(m,k) = a[m*sam + k*sak], B(k,n) = b[k*sbk + n*sbn], C row-major
const CONV_FWD: u32 = 1u; // A = weights [cout][cin*k*k], B = input patches, C = y [b][cout][oh][ow]
const CONV_DATA: u32 = 2u; // A = weights seen as [cin][cout*k*k], B = dy gathered, C = dx
const CONV_WEIGHT: u32 = 3u; // A = dy [cout][(b,oy,ox)], B = input patches [(b,oy,ox)][(ci,ky,kx)]


fn in_plane(y: i32, x: i32, h: u32, w: u32) -> bool {
    return y >= 0 && x >= 0 && u32(y) < h && u32(x) < w;
}

// What the B loads of one column need, computed once per invocation.
struct Col { rb0: u32, rb1: i32, rb2: i32, vb: bool }

fn col_info(mode: u32, n: u32) -> Col {
    var c: Col;
    c.vb = n < p.n;
    let s = i32(p.stride);
    let pad = i32(p.pad);
    if (mode == STRIDED) {
        c.rb0 = n * p.sbn;
    } else if (mode == CONV_FWD) {
        let ohw = p.oh * p.ow;
        let r = n % ohw;
        c.rb0 = (n / ohw) * p.cin * p.h * p.w;
        c.rb1 = i32(r / p.ow) * s - pad;
        c.rb2 = i32(r % p.ow) * s - pad;
    } else if (mode == CONV_DATA) {
        let hw = p.h * p.w;
        let r = n % hw;
        c.rb0 = (n / hw) * p.cout * p.oh * p.ow;
        c.rb1 = i32(r / p.w) + pad;
        c.rb2 = i32(r % p.w) + pad;
    } else {
        let kk2 = p.ksize * p.ksize;
        let r = n % kk2;
        c.rb0 = (n / kk2) * p.h * p.w;
        c.rb1 = i32(r / p.ksize) - pad;
        c.rb2 = i32(r % p.ksize) - pad;
    }
    return c;
}

// k decoded: conv forward and input gradient (ci|co, tap, ky, kx); weight gradient
// (b, position, oy*stride, ox*stride).
fn k_decode(mode: u32, k: u32) -> vec4<i32> {
    if (mode == CONV_FWD || mode == CONV_DATA) {
        let kk2 = p.ksize * p.ksize;
        let r = k % kk2;
        return vec4<i32>(i32(k / kk2), i32(r), i32(r / p.ksize), i32(r % p.ksize));
    }
    if (mode == CONV_WEIGHT) {
        let ohw = p.oh * p.ow;
        let r = k % ohw;
        return vec4<i32>(i32(k / ohw), i32(r), i32(r / p.ow) * i32(p.stride), i32(r % p.ow) * i32(p.stride));
    }
    return vec4<i32>(0);
}

fn load_a(mode: u32, m: u32, k: u32, kd: vec4<i32>) -> f32 {
    if (m >= p.m) { return 0.0; }
    let q = u32(kd.x);
    let r = u32(kd.y);
    if (mode == STRIDED) { return a_buf[m * p.sam + k * p.sak]; }
    if (mode == CONV_FWD) { return a_buf[m * p.k + k]; }
    if (mode == CONV_DATA) { return a_buf[(q * p.cin + m) * p.ksize * p.ksize + r]; }
    return a_buf[(q * p.cout + m) * p.oh * p.ow + r];
}

fn load_b(mode: u32, c: Col, k: u32, kd: vec4<i32>) -> f32 {
    if (!c.vb) { return 0.0; }
    let q = u32(kd.x);
    if (mode == STRIDED) { return b_buf[k * p.sbk + c.rb0]; }
    if (mode == CONV_FWD) {
        let y = c.rb1 + kd.z;
        let x = c.rb2 + kd.w;
        if (!in_plane(y, x, p.h, p.w)) { return 0.0; }
        return b_buf[c.rb0 + q * p.h * p.w + u32(y) * p.w + u32(x)];
    }
    if (mode == CONV_DATA) {
        let s = i32(p.stride);
        let ty = c.rb1 - kd.z;
        let tx = c.rb2 - kd.w;
        if (ty < 0 || tx < 0 || ty % s != 0 || tx % s != 0) { return 0.0; }
        let oy = u32(ty / s);
        let ox = u32(tx / s);
        if (oy >= p.oh || ox >= p.ow) { return 0.0; }
        return b_buf[c.rb0 + q * p.oh * p.ow + oy * p.ow + ox];
    }
    let y = kd.z + c.rb1;
    let x = kd.w + c.rb2;
    if (!in_plane(y, x, p.h, p.w)) { return 0.0; }
    return b_buf[q * p.cin * p.h * p.w + c.rb0 + u32(y) * p.w + u32(x)];
}

// C(m, n) at its place in the output; split s of a split product goes to slice s of the
// workspace (same layout), the bias only into slice 0.
fn store_one(mode: u32, split: u32, m: u32, n: u32, v: f32) {
    if (m >= p.m || n >= p.n) { return; }
    var x = v;
    var at = m * p.n + n;
    if (mode == CONV_FWD) {
        let ohw = p.oh * p.ow;
        if (p.has_bias != 0u && split == 0u) { x += bias[m]; }
        at = ((n / ohw) * p.cout + m) * ohw + n % ohw;
    } else if (mode == CONV_DATA) {
        let hw = p.h * p.w;
        at = ((n / hw) * p.cin + m) * hw + n % hw;
    } else if (mode == STRIDED && p.has_bias != 0u && split == 0u) {
        x += bias[n];
    }
    c_buf[split * p.m * p.n + at] = x;
}
