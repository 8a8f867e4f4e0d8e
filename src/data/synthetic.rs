//! Seeded synthetic data for tests, benches and demos: labeled images made of smooth blobs (so a
//! small CNN can learn them) and activation-like tensors (smooth planes after a ReLU: exact zeros,
//! flat regions and edges, the structure the codec is built for). The same seed gives the same
//! values on one platform; other platforms may differ in the last bits (`exp` and `sin` come from
//! the platform's math library).

use super::Dataset;
use crate::io::Tensor;

/// SplitMix64: a tiny, fast, seedable generator (not cryptographic).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 24 bits of precision.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A Gaussian blob on a plane.
struct Blob {
    y: f32,
    x: f32,
    inv_two_sigma2: f32,
    amp: f32,
}

impl Blob {
    fn at(&self, y: f32, x: f32) -> f32 {
        let (dy, dx) = (y - self.y, x - self.x);
        self.amp * (-(dy * dy + dx * dx) * self.inv_two_sigma2).exp()
    }
}

/// `count` labeled `rows × cols` images of `classes` classes, cycling through the labels.
///
/// Class `k` places a bright blob on a ring at angle `2πk/classes` plus a dimmer central blob; the
/// position, size and brightness are jittered per image, so classes are separable but not trivial.
pub fn images(count: usize, rows: usize, cols: usize, classes: usize, seed: u64) -> Dataset {
    let mut rng = SplitMix64::new(seed ^ 0x1D_A7A5);
    let classes = classes.clamp(1, 256);
    let (h, w) = (rows as f32, cols as f32);
    let mut pixels = Vec::with_capacity(count * rows * cols);
    let mut labels = Vec::with_capacity(count);
    for i in 0..count {
        let label = i % classes;
        let angle = std::f32::consts::TAU * label as f32 / classes as f32 + rng.range(-0.15, 0.15);
        let radius = 0.28 * h.min(w) * rng.range(0.85, 1.15);
        let ring = Blob {
            y: h / 2.0 + radius * angle.sin(),
            x: w / 2.0 + radius * angle.cos(),
            inv_two_sigma2: 1.0 / (2.0 * (0.09 * h.min(w) * rng.range(0.8, 1.3)).powi(2)),
            amp: rng.range(180.0, 255.0),
        };
        let center = Blob {
            y: h / 2.0 + rng.range(-1.5, 1.5),
            x: w / 2.0 + rng.range(-1.5, 1.5),
            inv_two_sigma2: 1.0 / (2.0 * (0.15 * h.min(w)).powi(2)),
            amp: rng.range(40.0, 110.0),
        };
        for y in 0..rows {
            for x in 0..cols {
                let v = ring.at(y as f32, x as f32) + center.at(y as f32, x as f32) + rng.range(-6.0, 6.0);
                pixels.push(v.clamp(0.0, 255.0) as u8);
            }
        }
        labels.push(label as u8);
    }
    Dataset { rows, cols, images: pixels, labels }
}

/// An activation-like tensor of `shape` (rank 1 to 4, no zero dimension; others give an error).
///
/// Rank 4 (`[N, C, H, W]`): each plane is a sum of a few signed Gaussian blobs plus a small ripple,
/// shifted down and passed through a ReLU, so that roughly half to three quarters of the values are
/// exact zeros and the rest are smooth. Lower ranks treat the last dimension as a 1-D signal.
pub fn activation(shape: &[usize], seed: u64) -> crate::Result<Tensor> {
    let count = shape.iter().product::<usize>();
    let mut data = Vec::with_capacity(count);
    let mut rng = SplitMix64::new(seed ^ 0xAC71_7A7E);
    let (h, w) = match shape.len() {
        4 => (shape[2], shape[3]),
        _ => (1, shape.last().copied().unwrap_or(0)),
    };
    let planes = count.checked_div(h * w).unwrap_or(0);
    for _ in 0..planes {
        let blobs: Vec<Blob> = (0..1 + rng.below(4))
            .map(|_| Blob {
                y: rng.range(0.0, h as f32),
                x: rng.range(0.0, w as f32),
                inv_two_sigma2: 1.0 / (2.0 * (rng.range(0.08, 0.35) * h.max(w) as f32).powi(2)),
                amp: rng.range(-1.0, 2.5),
            })
            .collect();
        let (fy, fx, ripple) = (rng.range(0.2, 1.2), rng.range(0.2, 1.2), rng.range(0.0, 0.15));
        let offset = rng.range(0.1, 0.6);
        for y in 0..h {
            for x in 0..w {
                let (yf, xf) = (y as f32, x as f32);
                let smooth: f32 = blobs.iter().map(|b| b.at(yf, xf)).sum();
                let v = smooth + ripple * (fy * yf).sin() * (fx * xf).cos() - offset;
                data.push(v.max(0.0));
            }
        }
    }
    Tensor::new(shape.to_vec(), data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_spread() {
        let a: Vec<u64> = (0..4).scan(SplitMix64::new(7), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..4).scan(SplitMix64::new(7), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        let mut r = SplitMix64::new(1);
        let mut hist = [0usize; 8];
        for _ in 0..8000 {
            hist[r.below(8)] += 1;
            let f = r.next_f32();
            assert!((0.0..1.0).contains(&f));
        }
        assert!(hist.iter().all(|&n| (800..1200).contains(&n)), "{hist:?}");
    }

    #[test]
    fn images_are_seeded_labeled_and_not_blank() {
        let a = images(20, 28, 28, 10, 3);
        assert_eq!(a, images(20, 28, 28, 10, 3));
        assert_ne!(a, images(20, 28, 28, 10, 4));
        assert_eq!(a.len(), 20);
        assert_eq!(a.labels[..12], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
        for i in 0..a.len() {
            let img = a.image(i).expect("in range");
            assert!(img.iter().any(|&p| p > 150) && img.iter().filter(|&&p| p < 30).count() > 200);
        }
    }

    #[test]
    fn activations_look_like_post_relu_tensors() {
        let t = activation(&[2, 8, 32, 32], 11).unwrap();
        assert_eq!(t, activation(&[2, 8, 32, 32], 11).unwrap());
        let zeros = t.data.iter().filter(|&&v| v == 0.0).count() as f32 / t.len() as f32;
        assert!((0.2..0.95).contains(&zeros), "zero fraction {zeros}");
        assert!(t.data.iter().all(|v| v.is_finite() && *v >= 0.0));
        assert!(t.data.iter().any(|&v| v > 0.1));
        assert_eq!(activation(&[3, 100], 1).unwrap().len(), 300);
        assert!(activation(&[], 1).is_err());
        assert!(activation(&[2, 0, 4, 4], 1).is_err());
    }
}
