//! Batch-norm recalibration ("precise batch norm"): the training forward's momentum against the
//! mean of batch statistics computed here, and `Trainer::recalibrate_bn` on a trained `tiny`:
//! the first batch norm's statistics against the reference conv's output, image-weighted over
//! uneven batches, independent of the running statistics it replaces, weights untouched,
//! nothing read back.

mod common;

use common::{close, rand, read, up};

use fdsr::data::synthetic;
use fdsr::engine::batch::{make_batch, Normalization};
use fdsr::engine::ops::{self, BnParams};
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{ModelName, TrainConfig, Trainer};
use fdsr::gpu::{Category, Compute};
use fdsr::reference::conv::{conv2d_forward, ConvGeom};
use fdsr::GpuContext;

/// Per channel of `x [n, c, hw]`: mean and unbiased variance, in f64.
fn channel_stats(x: &[f32], n: usize, c: usize, hw: usize) -> (Vec<f64>, Vec<f64>) {
    let m = (n * hw) as f64;
    let values = |ch: usize| (0..n).flat_map(move |i| (0..hw).map(move |j| f64::from(x[(i * c + ch) * hw + j])));
    let mean: Vec<f64> = (0..c).map(|ch| values(ch).sum::<f64>() / m).collect();
    let var = (0..c).map(|ch| values(ch).map(|v| (v - mean[ch]).powi(2)).sum::<f64>() / (m - 1.0)).collect();
    (mean, var)
}

#[test]
fn momentum_b_over_seen_plus_b_gives_the_image_weighted_mean_of_batch_statistics() {
    let Some(ctx) = common::gpu() else { return };
    let (c, hw) = (3, 25);
    let ones = up(&ctx, &[1.0; 3], &[c]);
    let zeros = up(&ctx, &[0.0; 3], &[c]);
    let (rm, rv) = (up(&ctx, &[7.0; 3], &[c]), up(&ctx, &[9.0; 3], &[c]));
    let (mut want_m, mut want_v, mut seen) = (vec![0.0f64; c], vec![0.0f64; c], 0usize);
    for (k, n) in [4usize, 4, 2].into_iter().enumerate() {
        let x: Vec<f32> = rand(n * c * hw, 70 + k as u64).iter().map(|v| 3.0 * v + k as f32).collect();
        let momentum = n as f32 / (seen + n) as f32;
        let p = BnParams { gamma: &ones, beta: &zeros, running_mean: &rm, running_var: &rv, momentum };
        let mut e = ctx.device.create_command_encoder(&Default::default());
        ops::batchnorm_train_forward(&ctx, &mut e, &up(&ctx, &x, &[n, c, 5, 5]), &p, false).unwrap();
        ctx.queue.submit([e.finish()]);
        let (m, v) = channel_stats(&x, n, c, hw);
        for ch in 0..c {
            want_m[ch] += n as f64 * m[ch];
            want_v[ch] += n as f64 * v[ch];
        }
        seen += n;
    }
    let per_image = |v: Vec<f64>| v.iter().map(|s| (s / seen as f64) as f32).collect::<Vec<f32>>();
    close(&read(&ctx, &rm), &per_image(want_m), 1e-4, "running mean");
    close(&read(&ctx, &rv), &per_image(want_v), 1e-4, "running variance");
    let p = BnParams { gamma: &ones, beta: &zeros, running_mean: &rm, running_var: &rv, momentum: 0.0 };
    let mut e = ctx.device.create_command_encoder(&Default::default());
    let err = ops::batchnorm_train_forward(&ctx, &mut e, &up(&ctx, &[0.0; 12], &[1, 3, 2, 2]), &p, false).unwrap_err();
    assert!(err.to_string().contains("momentum 0"), "{err}");
}

/// Every running statistic of `t`'s model, by name.
fn running(ctx: &GpuContext, t: &Trainer) -> Vec<(String, Vec<f32>)> {
    let mut out = Vec::new();
    t.model.visit(&mut |p| {
        if p.name.contains("running_") {
            out.push((p.name.clone(), read(ctx, &p.value)));
        }
    });
    out
}

#[test]
fn recalibration_replaces_running_statistics_and_nothing_else() {
    let Some(ctx) = common::gpu() else { return };
    let cfg = TrainConfig {
        model: ModelName::Tiny,
        epochs: 1,
        batch: 16,
        lr: 0.1,
        schedule: Schedule::Constant,
        opt: OptConfig::defaults(OptKind::Sgd),
        seed: 5,
        augment: false,
        policy: Some("fdsr:budget=4,mask".parse().unwrap()),
        compute: Compute::Fp32,
    };
    let data = synthetic::images(32, 28, 28, 10, 12);
    let norm = Normalization::of(&data);
    let mut t = Trainer::new(&ctx, cfg).unwrap();
    for s in 0..3 {
        let idx: Vec<usize> = (0..16).map(|i| (16 * s + i) % 32).collect();
        let (x, y) = make_batch(&data, &idx, norm, None).unwrap();
        pollster::block_on(t.step(&ctx, &x, &y, 0.1)).unwrap();
    }
    let mut weights = Vec::new();
    t.model.visit(&mut |p| weights.push(read(&ctx, &p.value)));
    let trained = running(&ctx, &t);
    assert_eq!(pollster::block_on(t.recalibrate_bn(&ctx, &data, norm, 16, 0)).unwrap(), 0);
    assert_eq!(running(&ctx, &t), trained, "0 batches: nothing changes");

    // Batches of 12, 12 and 8 images (36 asked, 32 there), weighted by images: the first batch
    // norm's statistics are those of the first conv's output, computed here.
    // It holds no more saved activations than an evaluation of the same batches does.
    let saved_peak = || ctx.pool.report().peak.get(&Category::SavedActivations).copied();
    ctx.pool.reset_peaks();
    pollster::block_on(t.evaluate(&ctx, &data, norm, 12)).unwrap();
    let evaluation = saved_peak();
    ctx.pool.reset_peaks();
    let before = ctx.transfer_counts();
    assert_eq!(pollster::block_on(t.recalibrate_bn(&ctx, &data, norm, 12, 3)).unwrap(), 32);
    let counts = ctx.transfer_counts().since(&before);
    assert_eq!((counts.read_back, counts.host_waits), (0, 0), "recalibration reads nothing back");
    assert_eq!(saved_peak(), evaluation, "recalibration saves nothing");
    let once = running(&ctx, &t);
    assert!(once != trained, "the running statistics are replaced");
    let mut w = Vec::new();
    t.model.visit(&mut |p| {
        if p.name == "layer1.conv.weight" {
            w = read(&ctx, &p.value)
        }
    });
    let (mut want_m, mut want_v) = (vec![0.0f64; 8], vec![0.0f64; 8]);
    for (start, n) in [(0, 12), (12, 12), (24, 8)] {
        let (x, _) = make_batch(&data, &(start..start + n).collect::<Vec<_>>(), norm, None).unwrap();
        let g = ConvGeom { batch: n, cin: 1, h: 32, w: 32, cout: 8, ksize: 3, stride: 1, pad: 1 };
        let (m, v) = channel_stats(&conv2d_forward(&g, &x, &w, None), n, 8, 32 * 32);
        (0..8).for_each(|ch| (want_m[ch], want_v[ch]) = (want_m[ch] + n as f64 * m[ch], want_v[ch] + n as f64 * v[ch]));
    }
    let per_image = |v: Vec<f64>| v.iter().map(|s| (s / 32.0) as f32).collect::<Vec<f32>>();
    let at = |name: &str| &once[once.iter().position(|(n, _)| n == name).unwrap()].1;
    close(at("layer1.bn.running_mean"), &per_image(want_m), 1e-4, "layer1 running mean");
    close(at("layer1.bn.running_var"), &per_image(want_v), 1e-4, "layer1 running variance");

    // From other running statistics, the same result.
    t.model.visit_mut(&mut |p| {
        if p.name.contains("running_") {
            p.value.write(&ctx, &vec![3.0; p.value.numel()]).unwrap();
        }
    });
    pollster::block_on(t.recalibrate_bn(&ctx, &data, norm, 12, 3)).unwrap();
    assert_eq!(running(&ctx, &t), once, "recalibration does not depend on what it replaces");

    let mut after = Vec::new();
    t.model.visit(&mut |p| after.push(read(&ctx, &p.value)));
    let differing = weights.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(differing, trained.len(), "only the running statistics move");
}
