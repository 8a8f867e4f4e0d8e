//! The 8×8 orthonormal DCT-II of the `fdsr` path (docs/CODEC.md, fdsr steps 1–2 and 9): the host
//! basis, the JPEG zig-zag order, the separable transform with a fixed f32 accumulation order that
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

/// Forward 2-D DCT of a raster tile: `Y[r][k] = Σ_n B[k][n]·x[r][n]` on rows, then
/// `X[k][c] = Σ_n B[k][n]·Y[n][c]` on columns; sums accumulate in f32 from 0 in order n = 0..7.
/// The result is in raster order (`row frequency · 8 + column frequency`).
pub fn forward(tile: &[f32; 64], basis: &[f32; 64]) -> [f32; 64] {
    let mut rows = [0f32; 64];
    for r in 0..8 {
        for k in 0..8 {
            let mut acc = 0f32;
            for n in 0..8 {
                acc += basis[k * 8 + n] * tile[r * 8 + n];
            }
            rows[r * 8 + k] = acc;
        }
    }
    let mut out = [0f32; 64];
    for c in 0..8 {
        for k in 0..8 {
            let mut acc = 0f32;
            for n in 0..8 {
                acc += basis[k * 8 + n] * rows[n * 8 + c];
            }
            out[k * 8 + c] = acc;
        }
    }
    out
}

/// Inverse 2-D DCT of raster coefficients: `y[r][n] = Σ_k B[k][n]·X[r][k]` on rows, then
/// `x[n][c] = Σ_k B[k][n]·y[k][c]` on columns; f32 sums from 0 in order k = 0..7.
pub fn inverse(coef: &[f32; 64], basis: &[f32; 64]) -> [f32; 64] {
    let mut rows = [0f32; 64];
    for r in 0..8 {
        for n in 0..8 {
            let mut acc = 0f32;
            for k in 0..8 {
                acc += basis[k * 8 + n] * coef[r * 8 + k];
            }
            rows[r * 8 + n] = acc;
        }
    }
    let mut out = [0f32; 64];
    for c in 0..8 {
        for n in 0..8 {
            let mut acc = 0f32;
            for k in 0..8 {
                acc += basis[k * 8 + n] * rows[k * 8 + c];
            }
            out[n * 8 + c] = acc;
        }
    }
    out
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
