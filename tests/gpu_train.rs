//! End-to-end training on synthetic data: the loss falls, runs are reproducible, bad input errs.

mod common;

use fdsr::data::synthetic;
use fdsr::engine::batch::{epoch_order, make_batch, Normalization};
use fdsr::engine::controller::ControllerConfig;
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::saved::TensorRecord;
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
        policy: None,
        compute: fdsr::gpu::Compute::Fp32,
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
    let (first, last, _) = train(&ctx, cfg.clone(), 4);
    assert!(first.is_finite() && last.is_finite(), "resnet20 loss {first} -> {last}");
    // Compressed, with projection shortcuts that save their block's input a second time (stored
    // once, restored for both): 4 images make the first stages' tensors large enough.
    cfg.batch = 4;
    cfg.policy = Some("fdsr:budget=2,mask,grad".parse().unwrap());
    let (first, last, _) = train(&ctx, cfg, 4);
    assert!(first.is_finite() && last.is_finite(), "compressed resnet20 loss {first} -> {last}");
}

#[test]
fn parameter_counts_match_the_readme() {
    let Some(ctx) = common::gpu() else { return };
    for (name, count) in [(ModelName::Cnn, 140_458), (ModelName::Resnet20, 272_186), (ModelName::Tiny, 11_522)] {
        let m = fdsr::engine::Model::new(&ctx, name, 0).unwrap();
        assert_eq!(m.parameter_count(), count, "{name}");
    }
}

#[test]
fn lossless_storage_reproduces_fp32_training_bit_for_bit() {
    let Some(ctx) = common::gpu() else { return };
    // cnn's conv inputs after the first are recomputed from their batch norms' stored inputs
    // (two of them through a max-pool), tiny's second.
    let mut cnn = config(ModelName::Cnn, OptKind::Sgd);
    cnn.batch = 4;
    let mut cfg = config(ModelName::Tiny, OptKind::Sgd);
    let mut fp32 = Vec::new();
    for mut c in [cnn, cfg.clone()] {
        fp32 = train(&ctx, c.clone(), 4).2;
        c.policy = Some("lossless".parse().unwrap());
        let (_, _, lossless) = train(&ctx, c.clone(), 4);
        assert!(fp32 == lossless, "{}: lossless changed the weights", c.model);
    }
    // The comparison is not vacuous: a lossy policy changes the weights.
    cfg.policy = Some("uniform:2".parse().unwrap());
    let (_, _, lossy) = train(&ctx, cfg, 4);
    assert_ne!(fp32, lossy);
}

#[test]
fn compressed_storage_trains_and_saves_memory() {
    let Some(ctx) = common::gpu() else { return };
    for policy in ["fdsr:budget=4", "uniform:2"] {
        let mut cfg = config(ModelName::Tiny, OptKind::Sgd);
        cfg.policy = Some(policy.parse().unwrap());
        cfg.epochs = 3;
        let data = synthetic::images(cfg.batch, 28, 28, 10, 11);
        let mut s = fdsr::engine::Session::new(Trainer::new(&ctx, cfg).unwrap(), data).unwrap();
        for _ in 0..3 {
            pollster::block_on(s.step(&ctx)).unwrap();
        }
        let m = pollster::block_on(s.trainer.read_metrics(&ctx)).unwrap();
        let st = pollster::block_on(s.trainer.saved.take_stats(&ctx)).unwrap();
        assert!(m.loss.is_finite(), "{policy}");
        // Per step: conv inputs and batch-norm inputs of both layers; the 16-image input
        // (16·1024 values) and larger activations are compressed, masks stay packed.
        assert!(st.stored_bytes * 4 < st.fp32_bytes, "{policy}: {st:?}");
        assert!(st.ratio() > 3.0, "{policy}: ratio {}", st.ratio());
        assert!(s.trainer.saved.is_empty());
    }
}

/// Takes `steps` steps of a `tiny` session with `policy` and a probe every `every` steps.
fn probed(ctx: &GpuContext, policy: &str, every: u64, steps: usize) -> Trainer {
    let mut cfg = config(ModelName::Tiny, OptKind::Sgd);
    cfg.policy = Some(policy.parse().unwrap());
    cfg.epochs = steps;
    let data = synthetic::images(cfg.batch, 28, 28, 10, 11);
    let mut s = fdsr::engine::Session::new(Trainer::new(ctx, cfg).unwrap(), data).unwrap();
    s.trainer.set_controller(Some(ControllerConfig { every, ..ControllerConfig::default() })).unwrap();
    for _ in 0..steps {
        pollster::block_on(s.step(ctx)).unwrap();
    }
    s.trainer
}

#[test]
fn pooled_relu_outputs_are_recomputed_so_no_tensor_needs_a_mask_of_its_own() {
    let Some(ctx) = common::gpu() else { return };
    let records = |policy: &str| {
        let t = probed(&ctx, policy, 2, 1);
        assert!(!t.controller.as_ref().unwrap().adaptive(), "fixed bits: probed, not adapted");
        pollster::block_on(t.saved.read_records(&ctx)).unwrap()
    };
    let (own, shared) = (records("fdsr:bits=8,4,2,0,mask=zeros"), records("fdsr:bits=8,4,2,0,mask"));
    let rec = |records: &[TensorRecord], name: &str| {
        records.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name}")).clone()
    };
    for r in [&own, &shared] {
        // The image and batch-norm inputs have negative values: no mask.
        for name in ["layer1.conv.input", "layer1.bn.input"] {
            assert!(!rec(r, name).own_mask && !rec(r, name).masked, "{name}");
            assert_eq!(rec(r, name).bits, [8, 4, 2, 0]);
        }
        assert_eq!(rec(r, "fc.input").form, "fp32");
        assert_eq!(rec(r, &r[2].name).form, "packed");
        // The pooled ReLU output, which `,mask=zeros` would give a mask of its own, is recomputed
        // from layer1's batch norm input, its ReLU mask and the pool's indices: nothing stored.
        let pooled = rec(r, "layer2.conv.input");
        assert_eq!((pooled.form.as_str(), pooled.reserved_bytes, pooled.own_mask), ("derived", 0, false));
    }
    let held = |r: &[TensorRecord]| r.iter().map(|r| r.reserved_bytes).sum::<u64>();
    assert_eq!(held(&own), held(&shared), "no tensor of tiny takes an own mask");
}

#[test]
fn the_controller_probes_and_allocates_per_tensor_budgets() {
    let Some(ctx) = common::gpu() else { return };
    let mut low = probed(&ctx, "fdsr:budget=4,mask,realloc", 2, 4);
    let mut high = probed(&ctx, "fdsr:budget=8,mask,realloc", 2, 4);
    let (dl, dh) =
        (low.controller.as_mut().unwrap().take_decisions(), high.controller.as_mut().unwrap().take_decisions());
    assert_eq!(dl.iter().map(|d| d.step).collect::<Vec<_>>(), [1, 3]);
    for (a, b) in dl.iter().zip(&dh) {
        assert!(a.grad_error.is_finite() && a.grad_error > 0.0, "{a:?}");
        // More bits, smaller gradient error (the probe measures the codec, not noise).
        assert!(b.grad_error < a.grad_error, "8 bits {} vs 1 bit {}", b.grad_error, a.grad_error);
    }
    let budgets = &dl[1].budgets;
    let names: Vec<&str> = budgets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["layer1.bn.input", "layer1.conv.input", "layer2.bn.input"], "layer2.conv.input is derived");
    // The allocation is applied: the records of the last step carry it (less an own mask's bit).
    let records = pollster::block_on(low.saved.read_records(&ctx)).unwrap();
    let r = records.iter().find(|r| r.name == "layer1.bn.input").unwrap();
    assert_eq!(r.budget, Some(budgets[0].1));
}
