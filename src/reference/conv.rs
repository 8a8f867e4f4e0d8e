//! Reference conv2d and linear layers (forward and both gradients), the oracle of
//! `shaders/gemm.wgsl`: plain loops, f64 accumulation.

use crate::error::{FdsrError, Result};

/// Shape of one conv2d: input `[batch, cin, h, w]`, weights `[cout, cin, ksize, ksize]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGeom {
    /// Batch size.
    pub batch: usize,
    /// Input channels.
    pub cin: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub cout: usize,
    /// Kernel side (1 or 3 in the models; any odd or even size works).
    pub ksize: usize,
    /// Stride.
    pub stride: usize,
    /// Zero padding on every side.
    pub pad: usize,
}

impl ConvGeom {
    /// Output height.
    pub fn oh(&self) -> usize {
        (self.h + 2 * self.pad - self.ksize) / self.stride + 1
    }
    /// Output width.
    pub fn ow(&self) -> usize {
        (self.w + 2 * self.pad - self.ksize) / self.stride + 1
    }
    /// Output shape `[batch, cout, oh, ow]`.
    pub fn out_shape(&self) -> [usize; 4] {
        [self.batch, self.cout, self.oh(), self.ow()]
    }
    /// Weight shape `[cout, cin, ksize, ksize]`.
    pub fn weight_shape(&self) -> [usize; 4] {
        [self.cout, self.cin, self.ksize, self.ksize]
    }

    /// The geometry of `input` (rank 4) convolved with `weight` (rank 4), checked.
    pub fn of(input: &[usize], weight: &[usize], stride: usize, pad: usize) -> Result<ConvGeom> {
        let (&[batch, cin, h, w], &[cout, wcin, kh, kw]) = (input, weight) else {
            return Err(FdsrError::InvalidTensor(format!(
                "conv2d needs rank-4 input and weights, got {input:?} and {weight:?}"
            )));
        };
        if wcin != cin || kh != kw || kh == 0 || stride == 0 || h + 2 * pad < kh || w + 2 * pad < kw {
            return Err(FdsrError::InvalidTensor(format!(
                "conv2d of input {input:?} with weights {weight:?}, stride {stride}, pad {pad} is not defined"
            )));
        }
        Ok(ConvGeom { batch, cin, h, w, cout, ksize: kh, stride, pad })
    }
}

/// Calls `f(y, x, w)` with the flat indices of output, input and weight of every multiply of
/// the convolution (taps that fall into the zero padding are skipped).
fn for_each_tap(g: &ConvGeom, mut f: impl FnMut(usize, usize, usize)) {
    let (oh, ow, k) = (g.oh(), g.ow(), g.ksize);
    for b in 0..g.batch {
        for co in 0..g.cout {
            for oy in 0..oh {
                for ox in 0..ow {
                    let yi = ((b * g.cout + co) * oh + oy) * ow + ox;
                    for ci in 0..g.cin {
                        for ky in 0..k {
                            for kx in 0..k {
                                if let Some((iy, ix)) = input_pos(g, oy, ox, ky, kx) {
                                    f(
                                        yi,
                                        ((b * g.cin + ci) * g.h + iy) * g.w + ix,
                                        ((co * g.cin + ci) * k + ky) * k + kx,
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The input position that output `(oy, ox)` reads through tap `(ky, kx)`, if inside the input.
fn input_pos(g: &ConvGeom, oy: usize, ox: usize, ky: usize, kx: usize) -> Option<(usize, usize)> {
    let iy = (oy * g.stride + ky).checked_sub(g.pad)?;
    let ix = (ox * g.stride + kx).checked_sub(g.pad)?;
    (iy < g.h && ix < g.w).then_some((iy, ix))
}

fn to_f32(v: Vec<f64>) -> Vec<f32> {
    v.into_iter().map(|x| x as f32).collect()
}

/// `y[b, co, oy, ox] = Σ w[co, ci, ky, kx] · x[b, ci, oy·s + ky − p, ox·s + kx − p] (+ bias[co])`.
pub fn conv2d_forward(g: &ConvGeom, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let plane = g.oh() * g.ow();
    let mut y: Vec<f64> =
        (0..g.batch * g.cout * plane).map(|i| bias.map_or(0.0, |b| f64::from(b[(i / plane) % g.cout]))).collect();
    for_each_tap(g, |yi, xi, wi| y[yi] += f64::from(w[wi]) * f64::from(x[xi]));
    to_f32(y)
}

/// Input gradient `dx` of [`conv2d_forward`] for output gradient `dy`.
pub fn conv2d_backward_data(g: &ConvGeom, dy: &[f32], w: &[f32]) -> Vec<f32> {
    let mut dx = vec![0f64; g.batch * g.cin * g.h * g.w];
    for_each_tap(g, |yi, xi, wi| dx[xi] += f64::from(dy[yi]) * f64::from(w[wi]));
    to_f32(dx)
}

/// Weight gradient `dw` of [`conv2d_forward`] for output gradient `dy` and input `x`.
pub fn conv2d_backward_weight(g: &ConvGeom, dy: &[f32], x: &[f32]) -> Vec<f32> {
    let mut dw = vec![0f64; g.cout * g.cin * g.ksize * g.ksize];
    for_each_tap(g, |yi, xi, wi| dw[wi] += f64::from(dy[yi]) * f64::from(x[xi]));
    to_f32(dw)
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
