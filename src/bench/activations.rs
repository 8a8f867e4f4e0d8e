//! Realistic test activations: images through a seeded random 3×3 conv and ReLU, and smooth
//! synthetic images. Used by the quality benchmark, the speed benchmark and tests.

/// A small seeded PRNG (xorshift32) for reproducible benchmark inputs.
pub struct Rng(u32);

impl Rng {
    /// A generator from `seed` (0 is remapped).
    pub fn new(seed: u32) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9) | 1)
    }
    /// Next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / 16_777_216.0
    }
    /// Uniform in [-1, 1).
    pub fn signed(&mut self) -> f32 {
        self.uniform() * 2.0 - 1.0
    }
}

/// Smooth synthetic images `[n, 1, h, w]` in [0, 1]: a few random blobs and gradients each.
/// Only `+ - * /` are used, so native and wasm builds generate identical values.
pub fn smooth_images(n: usize, h: usize, w: usize, seed: u32) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n * h * w);
    for _ in 0..n {
        let blobs: Vec<[f32; 4]> = (0..4)
            .map(|_| {
                [
                    rng.uniform() * h as f32,
                    rng.uniform() * w as f32,
                    2.0 + rng.uniform() * h as f32 / 4.0,
                    rng.uniform(),
                ]
            })
            .collect();
        let (gy, gx) = (rng.signed() * 0.3, rng.signed() * 0.3);
        for y in 0..h {
            for x in 0..w {
                let mut v = 0.5 + gy * y as f32 / h as f32 + gx * x as f32 / w as f32;
                for b in &blobs {
                    let (dy, dx) = (y as f32 - b[0], x as f32 - b[1]);
                    let d2 = (dy * dy + dx * dx) / (b[2] * b[2]);
                    v += (b[3] - 0.5) / (1.0 + d2 * d2);
                }
                out.push(v.clamp(0.0, 1.0));
            }
        }
    }
    out
}

/// Single-channel images `[n, 1, h, w]` through `c_out` seeded random 3×3 filters (zero padding,
/// random bias), then ReLU: a realistic first-layer activation `[n, c_out, h, w]`.
pub fn conv3x3_relu(images: &[f32], n: usize, h: usize, w: usize, c_out: usize, seed: u32) -> Vec<f32> {
    let mut rng = Rng::new(seed ^ 0xc0ffee);
    let filters: Vec<[f32; 10]> = (0..c_out)
        .map(|_| {
            let mut f = [0f32; 10];
            f.iter_mut().take(9).for_each(|v| *v = rng.signed() / 3.0);
            f[9] = rng.signed() * 0.2;
            f
        })
        .collect();
    let mut out = vec![0f32; n * c_out * h * w];
    for i in 0..n {
        let img = &images[i * h * w..(i + 1) * h * w];
        for (c, f) in filters.iter().enumerate() {
            let o = &mut out[(i * c_out + c) * h * w..(i * c_out + c + 1) * h * w];
            for y in 0..h {
                for x in 0..w {
                    let mut acc = f[9];
                    for dy in 0..3 {
                        for dx in 0..3 {
                            let (yy, xx) = (y as isize + dy as isize - 1, x as isize + dx as isize - 1);
                            if yy >= 0 && xx >= 0 && (yy as usize) < h && (xx as usize) < w {
                                acc += f[dy * 3 + dx] * img[yy as usize * w + xx as usize];
                            }
                        }
                    }
                    o[y * w + x] = acc.max(0.0);
                }
            }
        }
    }
    out
}

/// Relative L2 error and maximum absolute error of `y` against `x`.
pub fn errors(x: &[f32], y: &[f32]) -> (f64, f64) {
    let (mut num, mut den, mut max) = (0f64, 0f64, 0f64);
    for (&a, &b) in x.iter().zip(y) {
        let d = f64::from(a) - f64::from(b);
        num += d * d;
        den += f64::from(a) * f64::from(a);
        max = max.max(d.abs());
    }
    ((num / den.max(f64::MIN_POSITIVE)).sqrt(), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_relu_activations_are_sparse_but_not_empty() {
        let img = smooth_images(2, 16, 16, 1);
        let a = conv3x3_relu(&img, 2, 16, 16, 8, 2);
        let zeros = a.iter().filter(|&&v| v == 0.0).count() as f64 / a.len() as f64;
        assert!(zeros > 0.1 && zeros < 0.95, "zero fraction {zeros}");
        assert!(a.iter().all(|v| v.is_finite() && *v >= 0.0));
    }
}
