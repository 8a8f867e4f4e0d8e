//! The fake-quantization kernel (`engine::ops::fake_quant`) against
//! `reference::fakequant::fake_quant` on random inputs: nearest and stochastic rounding, many
//! sizes (one value, partial workgroups, more values than the min/max pass covers at once) and
//! bit widths; bad bit widths are errors.

mod common;

use common::{rand, read, up};

use fdsr::engine::ops;
use fdsr::reference::fakequant::{fake_quant, stream};

/// Largest allowed difference from the reference, in f32 epsilons of the larger of the value
/// and the tensor's range: the dequantization `mn + q * step` may be fused into one multiply-add
/// on a device (about one rounding of the range); the quantization level itself must agree.
const EPS: f32 = 1.0;

#[test]
fn fake_quant_matches_reference() {
    let Some(ctx) = common::gpu() else { return };
    for (k, n) in [1usize, 255, 257, 1000, 70001, 200_000].into_iter().enumerate() {
        let mut x = rand(n, 40 + k as u64);
        // A shifted, scaled tensor: the range is not symmetric around zero.
        x.iter_mut().for_each(|v| *v = *v * 3.0 + 0.7);
        for bits in [2u32, 3, 4, 6, 8, 16] {
            for rng in [None, Some((11u32, stream(k as u64 * 7 + 3, bits)))] {
                let mut want = x.clone();
                fake_quant(&mut want, bits, rng);
                let xt = up(&ctx, &x, &[n]);
                let mut e = ctx.device.create_command_encoder(&Default::default());
                let y = ops::fake_quant(&ctx, &mut e, &xt, bits, rng).unwrap();
                ctx.queue.submit([e.finish()]);
                let got = read(&ctx, &y);
                let range = x.iter().fold(f32::MIN, |a, &v| a.max(v)) - x.iter().fold(f32::MAX, |a, &v| a.min(v));
                let exact = got.iter().zip(&want).filter(|(g, w)| g == w).count();
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let tol = EPS * f32::EPSILON * w.abs().max(range);
                    assert!((g - w).abs() <= tol, "n={n} bits={bits} rng={rng:?}: value {i} gpu {g} vs reference {w}");
                }
                eprintln!("n={n} bits={bits} stochastic={}: {exact} of {n} bit-exact", rng.is_some());
                assert_eq!(read(&ctx, &xt), x, "the input is left unchanged");
            }
        }
    }
}

#[test]
fn constant_tensors_are_kept_and_bad_bits_refused() {
    let Some(ctx) = common::gpu() else { return };
    let c = vec![1.5f32; 300];
    let t = up(&ctx, &c, &[3, 100]);
    let mut e = ctx.device.create_command_encoder(&Default::default());
    let y = ops::fake_quant(&ctx, &mut e, &t, 4, Some((1, 2))).unwrap();
    for bits in [0, 1, 17, 32] {
        let err = ops::fake_quant(&ctx, &mut e, &t, bits, None).unwrap_err().to_string();
        assert!(err.contains(&bits.to_string()) && err.contains("2..=16"), "{err}");
    }
    ctx.queue.submit([e.finish()]);
    assert_eq!(read(&ctx, &y), c);
    assert_eq!(y.shape(), &[3, 100]);
}
