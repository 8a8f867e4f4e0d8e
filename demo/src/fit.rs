//! The largest batch that fits under a memory cap, estimated from what a run measured: the
//! bytes held for backward by the saved activations grow linearly with the batch (the per-image
//! bytes of the last step, measured at its batch), on top of a fixed part that does not
//! (weights, their gradients and the optimizer state). An estimate: the workspace of the
//! kernels and the allocator's rounding are left out.

/// Bytes per MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// Memory of one policy as a line in the batch: `fixed + per_image × batch`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Bytes of saved activations held per image (measured: held bytes over the batch).
    pub per_image: f64,
    /// Bytes that do not grow with the batch.
    pub fixed: u64,
}

/// What fits under a cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The largest batch that fits (at least 1).
    Batch(u64),
    /// Not even one image fits: the fixed part and one image's bytes exceed the cap.
    Nothing,
}

/// Batches above this are reported as this (a cap far above any device).
pub const MAX_BATCH: u64 = 1 << 30;

impl Estimate {
    /// The estimate from a step that held `held` bytes of saved activations at `batch` images,
    /// with `fixed` bytes that do not grow; `None` for a batch of 0.
    pub fn measured(held: u64, batch: usize, fixed: u64) -> Option<Estimate> {
        (batch > 0).then(|| Estimate { per_image: held as f64 / batch as f64, fixed })
    }

    /// Estimated bytes at `batch` images.
    pub fn bytes_at(&self, batch: u64) -> f64 {
        self.fixed as f64 + self.per_image * batch as f64
    }

    /// The largest batch whose estimate is at most `cap` bytes (at most [`MAX_BATCH`]).
    pub fn largest_batch(&self, cap: u64) -> Fit {
        let room = cap as f64 - self.fixed as f64;
        if !(self.per_image.is_finite() && self.per_image >= 0.0) || room < self.per_image {
            return Fit::Nothing;
        }
        if self.per_image <= 0.0 {
            return Fit::Batch(MAX_BATCH);
        }
        let mut b = ((room / self.per_image).floor() as u64).clamp(1, MAX_BATCH);
        // Rounding of the division: step down until the estimate is within the cap.
        while b > 1 && self.bytes_at(b) > cap as f64 {
            b -= 1;
        }
        Fit::Batch(b)
    }
}

impl Fit {
    /// `batch 1234` or `nothing fits`.
    pub fn describe(self) -> String {
        match self {
            Fit::Batch(b) if b >= MAX_BATCH => format!("batch ≥ {b}"),
            Fit::Batch(b) => format!("batch {b}"),
            Fit::Nothing => "not even batch 1".to_string(),
        }
    }

    /// The batch, 0 when nothing fits.
    pub fn batch(self) -> u64 {
        match self {
            Fit::Batch(b) => b,
            Fit::Nothing => 0,
        }
    }
}

/// Bytes of `cap_mib` MiB.
pub fn cap_bytes(cap_mib: f32) -> u64 {
    if cap_mib.is_finite() && cap_mib > 0.0 {
        (f64::from(cap_mib) * MIB) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_image_bytes_come_from_the_measured_step() {
        let e = Estimate::measured(32 << 20, 32, 3 << 20).unwrap();
        assert_eq!(e.per_image, (1 << 20) as f64);
        assert_eq!(e.bytes_at(32), (35 << 20) as f64);
        assert_eq!(e.bytes_at(0), (3 << 20) as f64);
        assert!(Estimate::measured(100, 0, 0).is_none(), "no batch, no estimate");
    }

    #[test]
    fn the_largest_batch_is_the_last_one_under_the_cap() {
        // 1 MiB per image on 3 MiB fixed: a 64 MiB cap holds 61 images, 61 MiB + 3 MiB exactly.
        let e = Estimate { per_image: MIB, fixed: 3 << 20 };
        assert_eq!(e.largest_batch(64 << 20), Fit::Batch(61));
        assert_eq!(e.largest_batch((64 << 20) - 1), Fit::Batch(60));
        assert!(e.bytes_at(61) <= (64u64 << 20) as f64 && e.bytes_at(62) > (64u64 << 20) as f64);
        // A quarter of the bytes per image: four times the images in the same room.
        let q = Estimate { per_image: MIB / 4.0, fixed: 3 << 20 };
        assert_eq!(q.largest_batch(64 << 20), Fit::Batch(244));
        // Odd sizes: the answer always fits and one more image does not.
        let odd = Estimate { per_image: 12_345.67, fixed: 89_012 };
        for cap in [200_000u64, 1 << 20, 123_456_789] {
            let b = odd.largest_batch(cap).batch();
            assert!(b >= 1 && odd.bytes_at(b) <= cap as f64 && odd.bytes_at(b + 1) > cap as f64, "{cap}: {b}");
        }
    }

    #[test]
    fn caps_below_one_image_and_bad_estimates_fit_nothing() {
        let e = Estimate { per_image: MIB, fixed: 3 << 20 };
        assert_eq!(e.largest_batch(3 << 20), Fit::Nothing);
        assert_eq!(e.largest_batch(0), Fit::Nothing);
        assert_eq!(Estimate { per_image: f64::NAN, fixed: 0 }.largest_batch(1 << 30), Fit::Nothing);
        assert_eq!(Estimate { per_image: -1.0, fixed: 0 }.largest_batch(1 << 30), Fit::Nothing);
        // Nothing per image: any batch fits, reported at the ceiling.
        assert_eq!(Estimate { per_image: 0.0, fixed: 0 }.largest_batch(10), Fit::Batch(MAX_BATCH));
        assert_eq!(Fit::Nothing.describe(), "not even batch 1");
        assert_eq!(Fit::Batch(61).describe(), "batch 61");
    }

    #[test]
    fn caps_convert_from_mib_and_reject_bad_values() {
        assert_eq!(cap_bytes(64.0), 64 << 20);
        assert_eq!(cap_bytes(0.5), 1 << 19);
        assert_eq!(cap_bytes(-3.0), 0);
        assert_eq!(cap_bytes(f32::NAN), 0);
    }
}
