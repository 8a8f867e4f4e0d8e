//! End-to-end training on synthetic data: the loss falls, runs are reproducible, bad input errs.

mod common;

use fdsr::data::synthetic;
use fdsr::engine::batch::{epoch_order, make_batch, Normalization};
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{ModelName, TrainConfig, Trainer};
use fdsr::GpuContext;

fn config(model: ModelName, opt: OptKind) -> TrainConfig {
    TrainConfig {
        model,
        epochs: 1,
        batch: 16,
        lr: if opt == OptKind::Sgd { 0.1 } else { 0.01 },
        schedule: Schedule::Constant,
        opt: OptConfig::defaults(opt),
        seed: 3,
        augment: false,
    }
}

/// Trains `steps` steps on the same 16 synthetic images (memorizing them); returns the mean
/// loss of the first and last quarter and all parameter values at the end.
fn train(ctx: &GpuContext, cfg: TrainConfig, steps: usize) -> (f64, f64, Vec<f32>) {
    let data = synthetic::images(cfg.batch, 28, 28, 10, 11);
    let norm = Normalization::of(&data);
    let mut t = Trainer::new(ctx, cfg.clone()).unwrap();
    let order = epoch_order(data.len(), cfg.seed, 0);
    let mut losses = Vec::new();
    for s in 0..steps {
        let idx: Vec<usize> = (0..cfg.batch).map(|i| order[(s * cfg.batch + i) % data.len()]).collect();
        let (x, y) = make_batch(&data, &idx, norm, None).unwrap();
        pollster::block_on(t.step(ctx, &x, &y, cfg.lr)).unwrap();
        losses.push(pollster::block_on(t.read_metrics(ctx)).unwrap().loss);
    }
    let q = steps / 4;
    let first = losses[..q].iter().sum::<f64>() / q as f64;
    let last = losses[steps - q..].iter().sum::<f64>() / q as f64;
    let mut params = Vec::new();
    t.model.visit(&mut |p| params.extend(pollster::block_on(p.value.to_vec(ctx)).unwrap()));
    (first, last, params)
}

#[test]
fn tiny_learns_synthetic_classes_reproducibly() {
    let Some(ctx) = common::gpu() else { return };
    let (first, last, p1) = train(&ctx, config(ModelName::Tiny, OptKind::Sgd), 24);
    assert!(last < 0.8 * first, "loss did not fall: {first} -> {last}");
    let (_, _, p2) = train(&ctx, config(ModelName::Tiny, OptKind::Sgd), 24);
    assert_eq!(p1, p2, "same seed, same device: the same weights");
}

#[test]
fn adamw_and_resnet_blocks_train() {
    let Some(ctx) = common::gpu() else { return };
    let (first, last, _) = train(&ctx, config(ModelName::Tiny, OptKind::AdamW), 24);
    assert!(last < 0.8 * first, "AdamW loss did not fall: {first} -> {last}");
    let mut cfg = config(ModelName::Resnet20, OptKind::Sgd);
    cfg.batch = 2;
    let (first, last, _) = train(&ctx, cfg, 4);
    assert!(first.is_finite() && last.is_finite(), "resnet20 loss {first} -> {last}");
}

#[test]
fn parameter_counts_match_the_readme() {
    let Some(ctx) = common::gpu() else { return };
    for (name, count) in [(ModelName::Cnn, 140_458), (ModelName::Resnet20, 272_186), (ModelName::Tiny, 11_522)] {
        let m = fdsr::engine::Model::new(&ctx, name, 0).unwrap();
        assert_eq!(m.parameter_count(), count, "{name}");
    }
}
