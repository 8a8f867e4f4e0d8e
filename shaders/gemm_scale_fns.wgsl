// The power-of-two scales of the cooperative-matrix GEMM, shared by `gemm_coop.wgsl` and
// `gemm_scale.wgsl` (whose `scale_probe` entry lets any adapter run them against the host's
// mirror, `engine::gemm::scale_exponent` / `unscale`).

// The exponent e of a scale 2^e for an operand whose max |x| has the bits `bits`: e = 14 - the
// least e' with max < 2^e' (zero and subnormals count as 2^-126), kept in [-126, 126] where
// ldexp(1.0, e) is an exact normal f32 (every finite max needs e >= -114; inf / NaN stay what
// they are).
fn scale_exp(bits: u32) -> i32 {
    let e = i32((bits >> 23u) & 0xffu) - 126;
    return clamp(14 - e, -126, 126);
}

// c * 2^t in two exact steps of at most 126 each (|t| <= 252), the intermediate between c and
// the result, so nothing overflows or underflows that the result itself would not.
fn unscale(c: f32, t: i32) -> f32 {
    let h = t / 2;
    return ldexp(ldexp(c, h), t - h);
}
