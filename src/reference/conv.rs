//! Reference conv2d and linear layers (forward and both gradients), the oracle of
//! `shaders/gemm.wgsl`: plain loops, f64 accumulation.

use crate::engine::gemm::ConvGeom;

/// `y[b, co, oy, ox] = Σ w[co, ci, ky, kx] · x[b, ci, oy·s + ky − p, ox·s + kx − p] (+ bias[co])`.
pub fn conv2d_forward(g: &ConvGeom, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let (oh, ow, k) = (g.oh(), g.ow(), g.ksize);
    let mut y = vec![0f32; g.batch * g.cout * oh * ow];
    for b in 0..g.batch {
        for co in 0..g.cout {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = bias.map_or(0.0, |bs| f64::from(bs[co]));
                    for ci in 0..g.cin {
                        for ky in 0..k {
                            for kx in 0..k {
                                if let Some((iy, ix)) = input_pos(g, oy, ox, ky, kx) {
                                    let xv = x[((b * g.cin + ci) * g.h + iy) * g.w + ix];
                                    acc += f64::from(w[((co * g.cin + ci) * k + ky) * k + kx]) * f64::from(xv);
                                }
                            }
                        }
                    }
                    y[((b * g.cout + co) * oh + oy) * ow + ox] = acc as f32;
                }
            }
        }
    }
    y
}

/// The input position that output `(oy, ox)` reads through tap `(ky, kx)`, if inside the input.
fn input_pos(g: &ConvGeom, oy: usize, ox: usize, ky: usize, kx: usize) -> Option<(usize, usize)> {
    let iy = (oy * g.stride + ky).checked_sub(g.pad)?;
    let ix = (ox * g.stride + kx).checked_sub(g.pad)?;
    (iy < g.h && ix < g.w).then_some((iy, ix))
}

/// Input gradient `dx` of [`conv2d_forward`] for output gradient `dy`.
pub fn conv2d_backward_data(g: &ConvGeom, dy: &[f32], w: &[f32]) -> Vec<f32> {
    let (oh, ow, k) = (g.oh(), g.ow(), g.ksize);
    let mut dx = vec![0f64; g.batch * g.cin * g.h * g.w];
    for b in 0..g.batch {
        for co in 0..g.cout {
            for oy in 0..oh {
                for ox in 0..ow {
                    let d = f64::from(dy[((b * g.cout + co) * oh + oy) * ow + ox]);
                    for ci in 0..g.cin {
                        for ky in 0..k {
                            for kx in 0..k {
                                if let Some((iy, ix)) = input_pos(g, oy, ox, ky, kx) {
                                    dx[((b * g.cin + ci) * g.h + iy) * g.w + ix] +=
                                        d * f64::from(w[((co * g.cin + ci) * k + ky) * k + kx]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    dx.into_iter().map(|v| v as f32).collect()
}

/// Weight gradient `dw` of [`conv2d_forward`] for output gradient `dy` and input `x`.
pub fn conv2d_backward_weight(g: &ConvGeom, dy: &[f32], x: &[f32]) -> Vec<f32> {
    let (oh, ow, k) = (g.oh(), g.ow(), g.ksize);
    let mut dw = vec![0f64; g.cout * g.cin * k * k];
    for b in 0..g.batch {
        for co in 0..g.cout {
            for oy in 0..oh {
                for ox in 0..ow {
                    let d = f64::from(dy[((b * g.cout + co) * oh + oy) * ow + ox]);
                    for ci in 0..g.cin {
                        for ky in 0..k {
                            for kx in 0..k {
                                if let Some((iy, ix)) = input_pos(g, oy, ox, ky, kx) {
                                    dw[((co * g.cin + ci) * k + ky) * k + kx] +=
                                        d * f64::from(x[((b * g.cin + ci) * g.h + iy) * g.w + ix]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    dw.into_iter().map(|v| v as f32).collect()
}

/// `y[r, c] = Σ_i x[r, i] · w[c, i] (+ bias[c])` for `x [rows, inner]`, `w [cols, inner]`.
pub fn linear_forward(x: &[f32], w: &[f32], bias: Option<&[f32]>, rows: usize, inner: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0f32; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let dot: f64 = (0..inner).map(|i| f64::from(x[r * inner + i]) * f64::from(w[c * inner + i])).sum();
            y[r * cols + c] = (dot + bias.map_or(0.0, |b| f64::from(b[c]))) as f32;
        }
    }
    y
}

/// `(dx, dw, db)` of [`linear_forward`] for output gradient `dy [rows, cols]`.
pub fn linear_backward(
    dy: &[f32],
    x: &[f32],
    w: &[f32],
    rows: usize,
    inner: usize,
    cols: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut dx = vec![0f32; rows * inner];
    let mut dw = vec![0f32; cols * inner];
    for r in 0..rows {
        for i in 0..inner {
            dx[r * inner + i] =
                (0..cols).map(|c| f64::from(dy[r * cols + c]) * f64::from(w[c * inner + i])).sum::<f64>() as f32;
        }
    }
    for c in 0..cols {
        for i in 0..inner {
            dw[c * inner + i] =
                (0..rows).map(|r| f64::from(dy[r * cols + c]) * f64::from(x[r * inner + i])).sum::<f64>() as f32;
        }
    }
    let db = (0..cols).map(|c| (0..rows).map(|r| f64::from(dy[r * cols + c])).sum::<f64>() as f32).collect();
    (dx, dw, db)
}
