//! Host-side batches: epoch order, 28×28 images zero-padded to 32×32 and normalized, and the
//! optional random-shift and flip augmentation, all seeded so that a run can be replayed.

use super::model::INPUT_SIDE;
use crate::data::synthetic::SplitMix64;
use crate::data::Dataset;
use crate::error::{FdsrError, Result};

/// Largest shift of the random-crop augmentation, in pixels.
pub const MAX_SHIFT: i32 = 2;

/// Per-pixel normalization `(p/255 − mean) / std`, measured on a training set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalization {
    /// Mean of `p/255`.
    pub mean: f32,
    /// Standard deviation of `p/255`.
    pub std: f32,
}

impl Normalization {
    /// The mean and standard deviation of every pixel of `data` (f64 sums: deterministic).
    pub fn of(data: &Dataset) -> Normalization {
        let n = data.images.len().max(1) as f64;
        let sum: f64 = data.images.iter().map(|&p| f64::from(p) / 255.0).sum();
        let mean = sum / n;
        let var: f64 = data.images.iter().map(|&p| (f64::from(p) / 255.0 - mean).powi(2)).sum::<f64>() / n;
        Normalization { mean: mean as f32, std: (var.sqrt() as f32).max(1e-6) }
    }
}

/// The order in which epoch `epoch` visits `n` examples: a seeded Fisher–Yates shuffle.
pub fn epoch_order(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut rng = SplitMix64::new(seed ^ (epoch as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}

/// Images `indices` of `data` as `[n, 1, 32, 32]` values, centered in the 32×32 canvas (zero
/// pixels around them), normalized; with `augment`, each image is shifted by up to
/// [`MAX_SHIFT`] pixels and mirrored with probability ½, drawn from `augment`.
pub fn make_batch(
    data: &Dataset,
    indices: &[usize],
    norm: Normalization,
    mut augment: Option<&mut SplitMix64>,
) -> Result<(Vec<f32>, Vec<u8>)> {
    let side = INPUT_SIDE;
    if data.rows > side || data.cols > side {
        return Err(FdsrError::InvalidTensor(format!("{}x{} images do not fit {side}x{side}", data.rows, data.cols)));
    }
    let background = -norm.mean / norm.std;
    let mut out = vec![background; indices.len() * side * side];
    let mut labels = Vec::with_capacity(indices.len());
    let (oy, ox) = (((side - data.rows) / 2) as i32, ((side - data.cols) / 2) as i32);
    for (b, &i) in indices.iter().enumerate() {
        let img = data.image(i).ok_or_else(|| {
            FdsrError::InvalidConfig(format!("image index {i} is out of range (the set has {})", data.len()))
        })?;
        labels.push(data.labels[i]);
        let (mut dy, mut dx, mut flip) = (0, 0, false);
        if let Some(rng) = augment.as_deref_mut() {
            dy = rng.below(2 * MAX_SHIFT as usize + 1) as i32 - MAX_SHIFT;
            dx = rng.below(2 * MAX_SHIFT as usize + 1) as i32 - MAX_SHIFT;
            flip = rng.below(2) == 1;
        }
        let canvas = &mut out[b * side * side..(b + 1) * side * side];
        for r in 0..data.rows {
            for c in 0..data.cols {
                let src = if flip { data.cols - 1 - c } else { c };
                let (y, x) = (r as i32 + oy + dy, c as i32 + ox + dx);
                if (0..side as i32).contains(&y) && (0..side as i32).contains(&x) {
                    let p = f32::from(img[r * data.cols + src]) / 255.0;
                    canvas[y as usize * side + x as usize] = (p - norm.mean) / norm.std;
                }
            }
        }
    }
    Ok((out, labels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic;

    #[test]
    fn order_is_a_seeded_permutation() {
        let a = epoch_order(100, 7, 0);
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_eq!(a, epoch_order(100, 7, 0));
        assert_ne!(a, epoch_order(100, 7, 1));
        assert_ne!(a, epoch_order(100, 8, 0));
    }

    #[test]
    fn batches_are_centered_normalized_and_augmented_reproducibly() {
        let data = synthetic::images(4, 28, 28, 10, 3);
        let norm = Normalization::of(&data);
        let (x, labels) = make_batch(&data, &[1, 2], norm, None).unwrap();
        assert_eq!(x.len(), 2 * 32 * 32);
        assert_eq!(labels, vec![data.labels[1], data.labels[2]]);
        let p = f32::from(data.image(1).unwrap()[0]) / 255.0;
        assert!((x[2 * 32 + 2] - (p - norm.mean) / norm.std).abs() < 1e-6);
        assert_eq!(x[0], -norm.mean / norm.std);
        let (a1, _) = make_batch(&data, &[1, 2], norm, Some(&mut SplitMix64::new(5))).unwrap();
        let (a2, _) = make_batch(&data, &[1, 2], norm, Some(&mut SplitMix64::new(5))).unwrap();
        assert_eq!(a1, a2);
        assert!(make_batch(&data, &[9], norm, None).is_err());
    }
}
