//! The 8×8 orthonormal DCT-II of the `fdsr` path (docs/CODEC.md, fdsr steps 1–2 and 9): the host
//! basis, the JPEG zig-zag order, the separable butterfly transform whose f32 operation order
//! the shaders mirror, and edge-replicated tile extraction with cropping on the way back.

/// JPEG zig-zag order: `ZIGZAG[i]` is the raster position (`row·8 + col`) of zig-zag index `i`.
pub const ZIGZAG: [u8; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63,
];

/// The host basis `B[k·8 + n] = α(k)·cos((2n+1)kπ/16)`, `α(0) = √(1/8)`, `α(k) = √(2/8)`,
/// computed in f64 and cast to f32 (the shaders get this same table).
pub fn dct_basis() -> [f32; 64] {
    let mut b = [0f32; 64];
    for k in 0..8 {
        let alpha = if k == 0 { (1.0f64 / 8.0).sqrt() } else { (2.0f64 / 8.0).sqrt() };
        for n in 0..8 {
            let a = ((2 * n + 1) as f64 * k as f64 * std::f64::consts::PI) / 16.0;
            b[k * 8 + n] = (alpha * a.cos()) as f32;
        }
    }
    b
}

/// One 8-point forward DCT, `X[k] = Σ_n B[k][n]·v[n]`, by the even–odd butterfly that the
/// basis' symmetries allow (`B[k][7-n] = ±B[k][n]`, and within the even half `B[k][3-n] = ±B[k][n]`):
/// 52 operations instead of 120, reading only `B[k][0..4]`. The f32 operations, in this order, are
/// the contract the shaders mirror (docs/CODEC.md).
pub fn forward8(v: [f32; 8], b: &[f32; 64]) -> [f32; 8] {
    let e: [f32; 4] = std::array::from_fn(|n| v[n] + v[7 - n]);
    let o: [f32; 4] = std::array::from_fn(|n| v[n] - v[7 - n]);
    let (ee0, ee1, eo0, eo1) = (e[0] + e[3], e[1] + e[2], e[0] - e[3], e[1] - e[2]);
    let odd = |k: usize| b[k * 8] * o[0] + b[k * 8 + 1] * o[1] + b[k * 8 + 2] * o[2] + b[k * 8 + 3] * o[3];
    [
        b[0] * ee0 + b[1] * ee1,
        odd(1),
        b[16] * eo0 + b[17] * eo1,
        odd(3),
        b[32] * ee0 + b[33] * ee1,
        odd(5),
        b[48] * eo0 + b[49] * eo1,
        odd(7),
    ]
}

/// One 8-point inverse DCT, `v[n] = Σ_k B[k][n]·X[k]`, by the butterfly of [`forward8`] run
/// backwards (52 operations).
pub fn inverse8(x: [f32; 8], b: &[f32; 64]) -> [f32; 8] {
    let ee: [f32; 2] = std::array::from_fn(|n| b[n] * x[0] + b[32 + n] * x[4]);
    let eo: [f32; 2] = std::array::from_fn(|n| b[16 + n] * x[2] + b[48 + n] * x[6]);
    let e = [ee[0] + eo[0], ee[1] + eo[1], ee[1] - eo[1], ee[0] - eo[0]];
    let o: [f32; 4] = std::array::from_fn(|n| b[8 + n] * x[1] + b[24 + n] * x[3] + b[40 + n] * x[5] + b[56 + n] * x[7]);
    std::array::from_fn(|n| if n < 4 { e[n] + o[n] } else { e[7 - n] - o[7 - n] })
}

/// `f` on every row of a raster tile, then on every column of the result.
fn separable(tile: &[f32; 64], f: impl Fn([f32; 8]) -> [f32; 8]) -> [f32; 64] {
    let mut rows = [0f32; 64];
    for r in 0..8 {
        rows[r * 8..r * 8 + 8].copy_from_slice(&f(std::array::from_fn(|n| tile[r * 8 + n])));
    }
    let mut out = [0f32; 64];
    for c in 0..8 {
        let col = f(std::array::from_fn(|n| rows[n * 8 + c]));
        for (k, v) in col.into_iter().enumerate() {
            out[k * 8 + c] = v;
        }
    }
    out
}

/// Forward 2-D DCT of a raster tile: [`forward8`] on each row, then on each column. The result is
/// in raster order (`row frequency · 8 + column frequency`).
pub fn forward(tile: &[f32; 64], basis: &[f32; 64]) -> [f32; 64] {
    separable(tile, |v| forward8(v, basis))
}

/// Inverse 2-D DCT of raster coefficients: [`inverse8`] on each row, then on each column.
pub fn inverse(coef: &[f32; 64], basis: &[f32; 64]) -> [f32; 64] {
    separable(coef, |v| inverse8(v, basis))
}

/// Raster coefficients to zig-zag order.
pub fn to_zigzag(raster: &[f32; 64]) -> [f32; 64] {
    std::array::from_fn(|i| raster[ZIGZAG[i] as usize])
}

/// Zig-zag coefficients back to raster order.
pub fn from_zigzag(zz: &[f32; 64]) -> [f32; 64] {
    let mut out = [0f32; 64];
    for (i, &p) in ZIGZAG.iter().enumerate() {
        out[p as usize] = zz[i];
    }
    out
}

/// Number of 8×8 tiles along a side of `n` values.
pub fn tiles_along(n: usize) -> usize {
    n.div_ceil(8)
}

/// The 8×8 tile `(ty, tx)` of an `h×w` plane, padded by edge replication past the borders.
/// `plane.len()` must be `h·w` with `h, w ≥ 1`.
pub fn extract_tile(plane: &[f32], h: usize, w: usize, ty: usize, tx: usize) -> [f32; 64] {
    let mut t = [0f32; 64];
    for r in 0..8 {
        let y = (ty * 8 + r).min(h - 1);
        for c in 0..8 {
            let x = (tx * 8 + c).min(w - 1);
            t[r * 8 + c] = plane[y * w + x];
        }
    }
    t
}

/// Writes tile `(ty, tx)` back into an `h×w` plane, cropping the pad.
pub fn store_tile(plane: &mut [f32], h: usize, w: usize, ty: usize, tx: usize, tile: &[f32; 64]) {
    for r in 0..8 {
        let y = ty * 8 + r;
        if y >= h {
            break;
        }
        for c in 0..8 {
            let x = tx * 8 + c;
            if x >= w {
                break;
            }
            plane[y * w + x] = tile[r * 8 + c];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::quant::hash;

    #[test]
    fn zigzag_matches_the_diagonal_walk() {
        let mut order: Vec<usize> = Vec::new();
        for s in 0..15usize {
            let cells: Vec<usize> = (0..8).filter(|&r| s >= r && s - r < 8).map(|r| r * 8 + s - r).collect();
            // Even diagonals run bottom-left to top-right (row decreasing).
            if s % 2 == 0 {
                order.extend(cells.iter().rev());
            } else {
                order.extend(cells.iter());
            }
        }
        let zz: Vec<usize> = ZIGZAG.iter().map(|&p| p as usize).collect();
        assert_eq!(zz, order);
    }

    #[test]
    fn basis_is_orthonormal_and_transform_inverts() {
        let b = dct_basis();
        for i in 0..8 {
            for j in 0..8 {
                let d: f32 = (0..8).map(|n| b[i * 8 + n] * b[j * 8 + n]).sum();
                assert!((d - if i == j { 1.0 } else { 0.0 }).abs() < 1e-6);
            }
        }
        let tile: [f32; 64] = std::array::from_fn(|i| (hash(i as u32) % 1000) as f32 / 100.0 - 5.0);
        let c = forward(&tile, &b);
        let e_pix: f32 = tile.iter().map(|x| x * x).sum();
        let e_coef: f32 = c.iter().map(|x| x * x).sum();
        assert!((e_pix - e_coef).abs() < 1e-4 * e_pix);
        let back = inverse(&from_zigzag(&to_zigzag(&c)), &b);
        for (x, y) in tile.iter().zip(back.iter()) {
            assert!((x - y).abs() < 1e-4);
        }
        // A constant tile has DC = 8·value and (nearly) no AC.
        let k = forward(&[3.0; 64], &b);
        assert!((k[0] - 24.0).abs() < 1e-4);
        assert!(k[1..].iter().all(|v| v.abs() < 1e-4));
    }

    #[test]
    fn butterflies_agree_with_the_direct_sums() {
        let b = dct_basis();
        for seed in 0..64u32 {
            let v: [f32; 8] = std::array::from_fn(|i| (hash(seed * 8 + i as u32) % 2001) as f32 / 100.0 - 10.0);
            let (fwd, inv) = (forward8(v, &b), inverse8(v, &b));
            for k in 0..8 {
                let direct: f64 = (0..8).map(|n| b[k * 8 + n] as f64 * v[n] as f64).sum();
                assert!((fwd[k] as f64 - direct).abs() < 1e-5, "forward {seed} {k}");
                let direct: f64 = (0..8).map(|n| b[n * 8 + k] as f64 * v[n] as f64).sum();
                assert!((inv[k] as f64 - direct).abs() < 1e-5, "inverse {seed} {k}");
            }
        }
    }

    #[test]
    fn tiles_replicate_edges_and_crop() {
        let (h, w) = (5, 11);
        let plane: Vec<f32> = (0..h * w).map(|i| i as f32).collect();
        let t = extract_tile(&plane, h, w, 0, 1);
        assert_eq!(t[0], 8.0);
        assert_eq!(t[7], 10.0); // column 15 replicates column 10
        assert_eq!(t[7 * 8], 4.0 * 11.0 + 8.0); // row 7 replicates row 4
        let mut out = vec![0f32; h * w];
        for tx in 0..tiles_along(w) {
            let t = extract_tile(&plane, h, w, 0, tx);
            store_tile(&mut out, h, w, 0, tx, &t);
        }
        assert_eq!(out, plane);
    }
}
