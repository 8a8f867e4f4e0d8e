// Shared primitives of docs/CODEC.md: powers of two, scale codes, quantization, f16/bf16.
// Prepended (after rng.wgsl) to every codec shader; binding 0 of group 0 is always the host tables.

struct Tables {
    basis: array<vec4<f32>, 16>,   // DCT basis B[k*8+n]
    scale_t: array<vec4<f32>, 2>,  // T[k] = 2^(k/8)
    scale_i: array<vec4<f32>, 2>,  // I[k] = 2^(-k/8)
    zigzag: array<vec4<u32>, 16>,  // zig-zag index -> raster index
}

@group(0) @binding(0) var<uniform> tables: Tables;

fn zigzag(z: u32) -> u32 { return tables.zigzag[z >> 2u][z & 3u]; }
fn tab_t(k: u32) -> f32 { return tables.scale_t[k >> 2u][k & 3u]; }
fn tab_i(k: u32) -> f32 { return tables.scale_i[k >> 2u][k & 3u]; }

// One 8-wide row of a tile kept in registers (lavapipe turns dynamically indexed function-local
// arrays into slow scratch memory, so the DCT paths below use only named values).
struct Row { a: vec4<f32>, b: vec4<f32> }
struct Tile { r0: Row, r1: Row, r2: Row, r3: Row, r4: Row, r5: Row, r6: Row, r7: Row }

// acc + s * r, component-wise (same rounding as the scalar `acc + s * r[i]`).
fn madd(acc: Row, s: f32, r: Row) -> Row { return Row(acc.a + s * r.a, acc.b + s * r.b); }
fn rmul(s: f32, r: Row) -> Row { return Row(s * r.a, s * r.b); }
fn radd(x: Row, y: Row) -> Row { return Row(x.a + y.a, x.b + y.b); }
fn rsub(x: Row, y: Row) -> Row { return Row(x.a - y.a, x.b - y.b); }
// B[k][0..4], all that the butterflies read of basis row k.
fn bk(k: u32) -> vec4<f32> { return tables.basis[2u * k]; }

// The tile's columns as rows.
fn transpose(t: Tile) -> Tile {
    return Tile(
        Row(vec4<f32>(t.r0.a.x, t.r1.a.x, t.r2.a.x, t.r3.a.x), vec4<f32>(t.r4.a.x, t.r5.a.x, t.r6.a.x, t.r7.a.x)),
        Row(vec4<f32>(t.r0.a.y, t.r1.a.y, t.r2.a.y, t.r3.a.y), vec4<f32>(t.r4.a.y, t.r5.a.y, t.r6.a.y, t.r7.a.y)),
        Row(vec4<f32>(t.r0.a.z, t.r1.a.z, t.r2.a.z, t.r3.a.z), vec4<f32>(t.r4.a.z, t.r5.a.z, t.r6.a.z, t.r7.a.z)),
        Row(vec4<f32>(t.r0.a.w, t.r1.a.w, t.r2.a.w, t.r3.a.w), vec4<f32>(t.r4.a.w, t.r5.a.w, t.r6.a.w, t.r7.a.w)),
        Row(vec4<f32>(t.r0.b.x, t.r1.b.x, t.r2.b.x, t.r3.b.x), vec4<f32>(t.r4.b.x, t.r5.b.x, t.r6.b.x, t.r7.b.x)),
        Row(vec4<f32>(t.r0.b.y, t.r1.b.y, t.r2.b.y, t.r3.b.y), vec4<f32>(t.r4.b.y, t.r5.b.y, t.r6.b.y, t.r7.b.y)),
        Row(vec4<f32>(t.r0.b.z, t.r1.b.z, t.r2.b.z, t.r3.b.z), vec4<f32>(t.r4.b.z, t.r5.b.z, t.r6.b.z, t.r7.b.z)),
        Row(vec4<f32>(t.r0.b.w, t.r1.b.w, t.r2.b.w, t.r3.b.w), vec4<f32>(t.r4.b.w, t.r5.b.w, t.r6.b.w, t.r7.b.w)));
}

// sum_n B[k][n] o[n] over the odd half, accumulated in order n = 0..3.
fn odd4(b: vec4<f32>, o0: Row, o1: Row, o2: Row, o3: Row) -> Row {
    return madd(madd(madd(rmul(b.x, o0), b.y, o1), b.z, o2), b.w, o3);
}

// src/reference/dct.rs `forward8` on each column of t: row k of the result is
// sum_n B[k][n] t.r_n, by the same butterfly in the same f32 order.
fn forward8(t: Tile) -> Tile {
    let e0 = radd(t.r0, t.r7);
    let e1 = radd(t.r1, t.r6);
    let e2 = radd(t.r2, t.r5);
    let e3 = radd(t.r3, t.r4);
    let o0 = rsub(t.r0, t.r7);
    let o1 = rsub(t.r1, t.r6);
    let o2 = rsub(t.r2, t.r5);
    let o3 = rsub(t.r3, t.r4);
    let ee0 = radd(e0, e3);
    let ee1 = radd(e1, e2);
    let eo0 = rsub(e0, e3);
    let eo1 = rsub(e1, e2);
    let b0 = bk(0u);
    let b2 = bk(2u);
    let b4 = bk(4u);
    let b6 = bk(6u);
    return Tile(madd(rmul(b0.x, ee0), b0.y, ee1), odd4(bk(1u), o0, o1, o2, o3),
                madd(rmul(b2.x, eo0), b2.y, eo1), odd4(bk(3u), o0, o1, o2, o3),
                madd(rmul(b4.x, ee0), b4.y, ee1), odd4(bk(5u), o0, o1, o2, o3),
                madd(rmul(b6.x, eo0), b6.y, eo1), odd4(bk(7u), o0, o1, o2, o3));
}

// src/reference/dct.rs `inverse8` on each column of t: row n of the result is
// sum_k B[k][n] t.r_k, by the same butterfly in the same f32 order.
fn inverse8(t: Tile) -> Tile {
    let b0 = bk(0u);
    let b2 = bk(2u);
    let b4 = bk(4u);
    let b6 = bk(6u);
    let b1 = bk(1u);
    let b3 = bk(3u);
    let b5 = bk(5u);
    let b7 = bk(7u);
    let ee0 = madd(rmul(b0.x, t.r0), b4.x, t.r4);
    let ee1 = madd(rmul(b0.y, t.r0), b4.y, t.r4);
    let eo0 = madd(rmul(b2.x, t.r2), b6.x, t.r6);
    let eo1 = madd(rmul(b2.y, t.r2), b6.y, t.r6);
    let e0 = radd(ee0, eo0);
    let e1 = radd(ee1, eo1);
    let e2 = rsub(ee1, eo1);
    let e3 = rsub(ee0, eo0);
    let o0 = madd(madd(madd(rmul(b1.x, t.r1), b3.x, t.r3), b5.x, t.r5), b7.x, t.r7);
    let o1 = madd(madd(madd(rmul(b1.y, t.r1), b3.y, t.r3), b5.y, t.r5), b7.y, t.r7);
    let o2 = madd(madd(madd(rmul(b1.z, t.r1), b3.z, t.r3), b5.z, t.r5), b7.z, t.r7);
    let o3 = madd(madd(madd(rmul(b1.w, t.r1), b3.w, t.r3), b5.w, t.r5), b7.w, t.r7);
    return Tile(radd(e0, o0), radd(e1, o1), radd(e2, o2), radd(e3, o3),
                rsub(e3, o3), rsub(e2, o2), rsub(e1, o1), rsub(e0, o0));
}

// Forward DCT of docs/CODEC.md: forward8 on the rows (as columns of the transpose), then on the
// columns; the result's row k holds row frequency k.
fn dct_forward(x: Tile) -> Tile { return forward8(transpose(forward8(transpose(x)))); }
// Inverse: inverse8 on the rows, then on the columns.
fn dct_inverse(x: Tile) -> Tile { return inverse8(transpose(inverse8(transpose(x)))); }

fn pow2(n: i32) -> f32 { return bitcast<f32>(u32(n + 127) << 23u); }

// Unbiased exponent of |m| (subnormals and zero: -126).
fn exp_of(m: f32) -> i32 {
    let e = i32((bitcast<u32>(m) >> 23u) & 0xffu);
    return select(e - 127, -126, e == 0);
}

// 8-bit log-scale code of a magnitude m >= 0 (0 for m == 0); its scale is >= m.
fn encode_scale(m: f32, e0: i32) -> u32 {
    if (m == 0.0) { return 0u; }
    let b = bitcast<u32>(m);
    var e = exp_of(m);
    let m1 = select(bitcast<f32>((b & 0x7fffffu) | 0x3f800000u), 1.0, ((b >> 23u) & 0xffu) == 0u);
    var k = 8;
    for (var j = 7; j >= 0; j--) {
        if (tab_t(u32(j)) >= m1) { k = j; }
    }
    if (k == 8) { e += 1; k = 0; }
    let c = 8 * (e - e0) + k + 255;
    return u32(clamp(c, max(1, 255 - 8 * e0 - 1008), 255));
}

// AC scale codes (docs/CODEC.md): AC_SCALE_BITS bits, a quarter octave apart, the top one the
// scale code 255; code a > 0 is the scale code AC_SCALE_BASE + 2a (src/reference/quant.rs).
const AC_SCALE_BITS: u32 = 5u;
const AC_SCALE_BASE: i32 = 193;

// The least AC scale code (0 for m == 0) whose scale is >= m.
fn encode_ac_scale(m: f32, e0: i32) -> u32 {
    let c = encode_scale(m, e0);
    if (c == 0u) { return 0u; }
    return u32(clamp((i32(c) - AC_SCALE_BASE + 1) / 2, 1, 31));
}

// The scale code of AC scale code a.
fn ac_scale_code(a: u32) -> u32 { return select(u32(AC_SCALE_BASE) + 2u * a, 0u, a == 0u); }

// The AC scale code of a band at bits in 1..=8 whose largest |coefficient| is m: 0 (the band zero
// in this tile) where m·L·√2 is below the scale of encode_ac_scale's code (quant::ac_band_code).
fn ac_band_code(m: f32, e0: i32, bits: u32) -> u32 {
    let a = encode_ac_scale(m, e0);
    let l = f32((1u << bits) - 1u);
    return select(a, 0u, a != 0u && m * l * 1.4142135 < scale_value(ac_scale_code(a), e0));
}

fn scale_value(code: u32, e0: i32) -> f32 {
    let v = i32(code) - 255 + 8 * e0;
    return tab_t(u32(v & 7)) * pow2(v >> 3u);
}

fn inv_scale(code: u32, e0: i32) -> f32 {
    let v = i32(code) - 255 + 8 * e0;
    return tab_i(u32(v & 7)) * pow2(-(v >> 3u));
}

// Final rounding of a 24-bit fixed-point product p = level * 2^24.
fn round_fixed(p: u32, levels: u32, r24: u32, stochastic: bool) -> u32 {
    var q = p >> 24u;
    let r = p & 0xffffffu;
    if (stochastic) {
        if (r24 < r) { q += 1u; }
    } else if (r >= 0x800000u) {
        q += 1u;
    }
    return min(q, levels);
}

fn quantize_sym(x: f32, inv: f32, bits: u32, r24: u32, stochastic: bool) -> u32 {
    let levels = (1u << bits) - 1u;
    let v = clamp(x * inv, -1.0, 1.0);
    let f = i32(v * 8388608.0);
    return round_fixed(u32(f + 8388608) * levels, levels, r24, stochastic);
}

fn dequant_sym(q: u32, bits: u32, scale: f32) -> f32 {
    let levels = f32((1u << bits) - 1u);
    return (f32(2u * q) - levels) * (scale / levels);
}

fn quantize_asym(x: f32, mn: f32, inv: f32, bits: u32, r24: u32, stochastic: bool) -> u32 {
    let levels = (1u << bits) - 1u;
    let v = clamp((x - mn) * inv, 0.0, 1.0);
    let f = u32(v * 16777216.0);
    return round_fixed(f * levels, levels, r24, stochastic);
}

fn dequant_asym(q: u32, bits: u32, mn: f32, range: f32) -> f32 {
    let levels = f32((1u << bits) - 1u);
    return mn + f32(q) * (range / levels);
}

// Largest bf16 <= x (never infinite for finite x).
fn bf16_floor(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    var h = b >> 16u;
    if ((b & 0x80000000u) != 0u && (b & 0xffffu) != 0u) { h += 1u; }
    if ((h & 0x7fffu) == 0x7f80u) { h -= 1u; }
    return h;
}

fn bf16_nearest(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    var h = (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
    if ((h & 0x7fffu) == 0x7f80u) { h -= 1u; }
    return h;
}

fn bf16_value(h: u32) -> f32 { return bitcast<f32>(h << 16u); }

// f32 -> f16 bits, round to nearest even, saturating at +-65504. Branch-free (a CPU rasterizer
// runs both sides of a branch): below 2^-14 the float add of 0.5 rounds the f16 subnormal's code
// into the low mantissa bits; above, the exponent is rebiased and the mantissa rounded to 10 bits.
fn f16_bits(x_in: f32) -> u32 {
    let a0 = bitcast<u32>(clamp(x_in, -65504.0, 65504.0));
    let a = a0 & 0x7fffffffu;
    let sub = bitcast<u32>(bitcast<f32>(a) + 0.5) - 0x3f000000u;
    let nrm = (a - 0x38000000u + 0xfffu + ((a >> 13u) & 1u)) >> 13u;
    return ((a0 >> 16u) & 0x8000u) | select(nrm, sub, a < 0x38800000u);
}

// f16 bits -> f32, exactly (integer work; unpack2x16float needs an optional capability).
fn f16_value(h: u32) -> f32 {
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    let mag = select(bitcast<f32>(((e + 112u) << 23u) | (m << 13u)), f32(m) * pow2(-24), e == 0u);
    return select(mag, -mag, (h & 0x8000u) != 0u);
}

// Linear workgroup index of a 2-D dispatch.
fn group_index(wg: vec3<u32>, nwg: vec3<u32>) -> u32 { return wg.y * nwg.x + wg.x; }
