// Shared primitives of docs/CODEC.md: powers of two, scale codes, quantization, f16/bf16.
// Prepended (after rng.wgsl) to every codec shader; binding 0 of group 0 is always the host tables.

struct Tables {
    basis: array<vec4<f32>, 16>,   // DCT basis B[k*8+n]
    scale_t: array<vec4<f32>, 2>,  // T[k] = 2^(k/8)
    scale_i: array<vec4<f32>, 2>,  // I[k] = 2^(-k/8)
    zigzag: array<vec4<u32>, 16>,  // zig-zag index -> raster index
}

@group(0) @binding(0) var<uniform> tables: Tables;

fn basis(i: u32) -> f32 { return tables.basis[i >> 2u][i & 3u]; }
fn zigzag(z: u32) -> u32 { return tables.zigzag[z >> 2u][z & 3u]; }
fn tab_t(k: u32) -> f32 { return tables.scale_t[k >> 2u][k & 3u]; }
fn tab_i(k: u32) -> f32 { return tables.scale_i[k >> 2u][k & 3u]; }

// One 8-wide row of a tile kept in registers (lavapipe turns dynamically indexed function-local
// arrays into slow scratch memory, so the DCT paths below use only named values).
struct Row { a: vec4<f32>, b: vec4<f32> }
struct Tile { r0: Row, r1: Row, r2: Row, r3: Row, r4: Row, r5: Row, r6: Row, r7: Row }

// acc + s * r, component-wise (same rounding as the scalar `acc += s * r[i]`).
fn madd(acc: Row, s: f32, r: Row) -> Row { return Row(acc.a + s * r.a, acc.b + s * r.b); }
// Basis row k: B[k][0..8].
fn brow(k: u32) -> Row { return Row(tables.basis[2u * k], tables.basis[2u * k + 1u]); }
// Basis column n: B[0..8][n].
fn bcol(n: u32) -> Row {
    let i = n >> 2u;
    let j = n & 3u;
    return Row(vec4<f32>(tables.basis[i][j], tables.basis[2u + i][j], tables.basis[4u + i][j], tables.basis[6u + i][j]),
               vec4<f32>(tables.basis[8u + i][j], tables.basis[10u + i][j], tables.basis[12u + i][j], tables.basis[14u + i][j]));
}
// sum_n s[n] * v[n] accumulated from 0 in order n = 0..7.
fn comb(s: Row, v0: Row, v1: Row, v2: Row, v3: Row, v4: Row, v5: Row, v6: Row, v7: Row) -> Row {
    var acc = Row(vec4<f32>(0.0), vec4<f32>(0.0));
    acc = madd(acc, s.a.x, v0);
    acc = madd(acc, s.a.y, v1);
    acc = madd(acc, s.a.z, v2);
    acc = madd(acc, s.a.w, v3);
    acc = madd(acc, s.b.x, v4);
    acc = madd(acc, s.b.y, v5);
    acc = madd(acc, s.b.z, v6);
    acc = madd(acc, s.b.w, v7);
    return acc;
}
// Rows of t, each combined over the basis rows/columns given (one pass of the separable DCT).
fn pass_rows(t: Tile, v0: Row, v1: Row, v2: Row, v3: Row, v4: Row, v5: Row, v6: Row, v7: Row) -> Tile {
    return Tile(comb(t.r0, v0, v1, v2, v3, v4, v5, v6, v7), comb(t.r1, v0, v1, v2, v3, v4, v5, v6, v7),
                comb(t.r2, v0, v1, v2, v3, v4, v5, v6, v7), comb(t.r3, v0, v1, v2, v3, v4, v5, v6, v7),
                comb(t.r4, v0, v1, v2, v3, v4, v5, v6, v7), comb(t.r5, v0, v1, v2, v3, v4, v5, v6, v7),
                comb(t.r6, v0, v1, v2, v3, v4, v5, v6, v7), comb(t.r7, v0, v1, v2, v3, v4, v5, v6, v7));
}
// Forward DCT of docs/CODEC.md: rows[r][k] = sum_n B[k][n] x[r][n], then
// X[k][c] = sum_n B[k][n] rows[n][c]; both accumulate from 0 in order n = 0..7.
fn dct_forward(x: Tile) -> Tile {
    let t = pass_rows(x, bcol(0u), bcol(1u), bcol(2u), bcol(3u), bcol(4u), bcol(5u), bcol(6u), bcol(7u));
    return pass_rows(Tile(brow(0u), brow(1u), brow(2u), brow(3u), brow(4u), brow(5u), brow(6u), brow(7u)),
                     t.r0, t.r1, t.r2, t.r3, t.r4, t.r5, t.r6, t.r7);
}
// Inverse: rows[r][n] = sum_k B[k][n] X[r][k], then x[n][c] = sum_k B[k][n] rows[k][c].
fn dct_inverse(x: Tile) -> Tile {
    let t = pass_rows(x, brow(0u), brow(1u), brow(2u), brow(3u), brow(4u), brow(5u), brow(6u), brow(7u));
    return pass_rows(Tile(bcol(0u), bcol(1u), bcol(2u), bcol(3u), bcol(4u), bcol(5u), bcol(6u), bcol(7u)),
                     t.r0, t.r1, t.r2, t.r3, t.r4, t.r5, t.r6, t.r7);
}

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

// f32 -> f16 bits, round to nearest even, saturating at +-65504.
fn f16_bits(x_in: f32) -> u32 {
    let a0 = bitcast<u32>(clamp(x_in, -65504.0, 65504.0));
    let sign = (a0 >> 16u) & 0x8000u;
    let a = a0 & 0x7fffffffu;
    if (a <= 0x33000000u) { return sign; }
    let e = i32(a >> 23u) - 127;
    var m = a & 0x7fffffu;
    var shift = 13u;
    var q: u32;
    if (e < -14) {
        m |= 0x800000u;
        shift = u32(-1 - e);
        q = m >> shift;
    } else {
        q = (u32(e + 15) << 10u) | (m >> 13u);
    }
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) { q += 1u; }
    return sign | q;
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
