//! DPC: per-layer bit widths that decrease with layer capacity.
//!
//! Capacity of a layer is `log2(weights) + depth / (L - 1)` over the `L` compute layers (more
//! weights and later layers: more capacity, more tolerance to low precision). Capacities are
//! normalized to `t` in `[0, 1]` over the quantized layers, and a layer gets
//! `round(hi - (hi - lo) * t)` bits, forward and backward with their own `(hi, lo)`.

use super::geometry::ComputeLayer;

/// Capacity of each layer (see the module documentation).
pub fn capacity(layers: &[ComputeLayer]) -> Vec<f64> {
    let span = layers.len().saturating_sub(1).max(1) as f64;
    layers.iter().map(|l| (l.params as f64).log2() + l.depth as f64 / span).collect()
}

/// Bits per layer from `hi` (least capacity) down to `lo` (most), over the layers `quantized`
/// marks; the others get 32.
pub fn bits(layers: &[ComputeLayer], quantized: &[bool], (hi, lo): (u8, u8)) -> Vec<u8> {
    let cap = capacity(layers);
    let q = || cap.iter().zip(quantized).filter(|(_, &q)| q).map(|(c, _)| *c);
    let (min, max) = (q().fold(f64::INFINITY, f64::min), q().fold(f64::NEG_INFINITY, f64::max));
    cap.iter()
        .zip(quantized)
        .map(|(&c, &q)| {
            if !q {
                return 32;
            }
            let t = if max > min { (c - min) / (max - min) } else { 0.0 };
            (f64::from(hi) - f64::from(hi - lo) * t).round() as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model_name::ModelName;
    use crate::engine::precision::geometry::layers;

    #[test]
    fn bits_decrease_with_capacity() {
        let l = layers(ModelName::Resnet20);
        let mut q = vec![true; l.len()];
        q[0] = false;
        let b = bits(&l, &q, (8, 4));
        assert_eq!(b[0], 32);
        let cap = capacity(&l);
        for i in 1..l.len() {
            for j in 1..l.len() {
                if cap[i] < cap[j] {
                    assert!(b[i] >= b[j], "{} {} vs {} {}", l[i].name, b[i], l[j].name, b[j]);
                }
            }
        }
        assert!(b[1..].contains(&8) && b[1..].contains(&4));
    }
}
