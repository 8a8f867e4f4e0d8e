//! What a real GPU pays for in a training step, counted on any adapter: a steady-state
//! compressed step reads nothing back and never waits for the device, whatever the number of
//! saved tensors; the budget bounds what a step reserves; the probe leaves the run as it was,
//! never raises the peak of the pool and reads records back only to reallocate, and its spread
//! compares two rounding seeds; the mask-aware decode with and without its clamp at 0.

mod common;

use fdsr::data::synthetic;
use fdsr::engine::controller::ControllerConfig;
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{ModelName, Session, TrainConfig, Trainer};
use fdsr::gpu::TransferCounts;
use fdsr::GpuContext;
use pollster::block_on;

fn session(ctx: &GpuContext, model: ModelName, batch: usize, policy: Option<&str>, probe: Option<u64>) -> Session {
    let cfg = TrainConfig {
        model,
        epochs: 8,
        batch,
        lr: 0.02,
        schedule: Schedule::Constant,
        opt: OptConfig::defaults(OptKind::Sgd),
        seed: 5,
        augment: false,
        policy: policy.map(|p| p.parse().unwrap()),
        compute: fdsr::gpu::Compute::Fp32,
    };
    let data = synthetic::images(batch, 28, 28, 10, 3);
    let mut s = Session::new(Trainer::new(ctx, cfg).unwrap(), data).unwrap();
    s.trainer.set_controller(probe.map(|every| ControllerConfig { every, ..ControllerConfig::default() })).unwrap();
    s
}

/// Transfers of `steps` steps after `warm` steps (and a metric read), and the step's tensor count.
fn steady(ctx: &GpuContext, s: &mut Session, warm: usize, steps: usize) -> (TransferCounts, u64) {
    for _ in 0..warm {
        block_on(s.step(ctx)).unwrap();
    }
    block_on(s.trainer.read_metrics(ctx)).unwrap();
    let tensors = block_on(s.trainer.saved.take_stats(ctx)).unwrap().tensors / warm as u64;
    let before = ctx.transfer_counts();
    for _ in 0..steps {
        block_on(s.step(ctx)).unwrap();
    }
    (ctx.transfer_counts().since(&before), tensors)
}

#[test]
fn a_steady_compressed_step_reads_nothing_back_never_waits_and_submits_once() {
    let Some(ctx) = common::gpu() else { return };
    let mut seen = Vec::new();
    for (model, batch) in [(ModelName::Tiny, 8), (ModelName::Cnn, 4)] {
        for policy in ["fdsr:budget=4,mask,grad", "uniform:2", "division", "lossless", "fdsr:budget=5,reuse"] {
            let mut s = session(&ctx, model, batch, Some(policy), None);
            let (t, tensors) = steady(&ctx, &mut s, 2, 2);
            assert_eq!(t.read_back, 0, "{model} {policy}: {t:?}");
            assert_eq!(t.host_waits, 0, "{model} {policy}: {t:?}");
            assert_eq!(t.submits, 2, "{model} {policy}: one submit per step: {t:?}");
            // Uploads: the batch (images and labels) and kernel parameters only.
            let batch_bytes = (batch * 32 * 32 * 4 + batch) as u64;
            assert!(t.uploaded >= 2 * batch_bytes, "{model} {policy}: {t:?}");
            seen.push((model, tensors));
            let m = block_on(s.trainer.read_metrics(&ctx)).unwrap();
            assert!(m.loss.is_finite(), "{model} {policy}");
        }
    }
    assert!(seen[0].1 < seen.last().unwrap().1, "cnn saves more tensors than tiny: {seen:?}");
}

#[test]
fn a_probe_step_reads_back_words_not_gradients_in_waits_that_do_not_grow_with_the_model() {
    let Some(ctx) = common::gpu() else { return };
    let mut seen = Vec::new();
    for (model, batch) in [(ModelName::Tiny, 16), (ModelName::Cnn, 8)] {
        let mut s = session(&ctx, model, batch, Some("fdsr:budget=4,mask,grad,realloc"), Some(1));
        block_on(s.step(&ctx)).unwrap();
        let before = ctx.transfer_counts();
        block_on(s.step(&ctx)).unwrap();
        let t = ctx.transfer_counts().since(&before);
        let (mut weights, mut grad_bytes) = (0, 0);
        s.trainer.model.visit(&mut |p| {
            if p.name.ends_with(".weight") {
                (weights, grad_bytes) = (weights + 1, grad_bytes + 4 * p.value.numel() as u64);
            }
        });
        assert!(t.read_back > 0, "{model}: the step probed: {t:?}");
        assert!(t.read_back * 8 < grad_bytes, "{model}: {t:?} against {grad_bytes} bytes of weight gradients");
        seen.push((model, weights, t.host_waits));
    }
    assert!(seen[0].1 < seen[1].1, "cnn has more weights than tiny: {seen:?}");
    assert_eq!(seen[0].2, seen[1].2, "host waits of a probe step grow with the weights: {seen:?}");
}

#[test]
fn a_measuring_probe_reads_no_records_back_and_measures_what_a_reallocating_one_does() {
    let Some(ctx) = common::gpu() else { return };
    let mut seen = Vec::new();
    for policy in ["fdsr:budget=4,mask,grad", "fdsr:budget=4,mask,grad,realloc"] {
        let mut s = session(&ctx, ModelName::Cnn, 8, Some(policy), Some(1));
        let before = ctx.transfer_counts();
        block_on(s.step(&ctx)).unwrap();
        let t = ctx.transfer_counts().since(&before);
        let d = s.trainer.controller.as_mut().unwrap().take_decisions();
        assert_eq!(d.len(), 1, "{policy}: the first step probed");
        assert!(d[0].grad_error > 0.0, "{policy}: the probe found the compressed tensors: {:?}", d[0]);
        seen.push((t, d[0].grad_error));
    }
    let ((measure, e_measure), (realloc, e_realloc)) = (seen[0], seen[1]);
    assert_eq!(measure.host_waits + 1, realloc.host_waits, "{measure:?} against {realloc:?}");
    assert!(measure.read_back < realloc.read_back, "{measure:?} against {realloc:?}");
    assert_eq!(e_measure, e_realloc, "the first probe measures the same either way");
}

#[test]
fn a_budget_bounds_what_every_step_holds() {
    let Some(ctx) = common::gpu() else { return };
    for (model, batch, budget) in [(ModelName::Tiny, 8, 4.0), (ModelName::Tiny, 8, 6.0), (ModelName::Cnn, 4, 2.0)] {
        let policy = format!("fdsr:budget={budget},mask,grad");
        let mut s = session(&ctx, model, batch, Some(&policy), Some(2));
        for _ in 0..3 {
            block_on(s.step(&ctx)).unwrap();
            // Every step: compressed regions with their headers, own and ReLU masks, pooling
            // indices and exact tensors within the budget, a probe step included.
            let st = block_on(s.trainer.saved.take_stats(&ctx)).unwrap();
            assert!(st.ratio() >= 32.0 / budget, "{model} {policy}: ratio {} ({st:?})", st.ratio());
            assert!(st.stored_bytes <= st.reserved_bytes, "{st:?}");
        }
        let records = block_on(s.trainer.saved.read_records(&ctx)).unwrap();
        let compressed: Vec<_> = records.iter().filter(|r| r.form.starts_with("fdsr")).collect();
        assert!(compressed.len() >= 3, "{model}: {} tensors compressed", compressed.len());
        for r in compressed {
            assert!(r.stored_bytes <= r.reserved_bytes && r.stored_bytes > 0 && !r.bits.is_empty(), "{r:?}");
        }
        // A conv input that is a batch norm's ReLU output, pooled or not, is recomputed from the
        // batch norm's stored input: counted at fp32, nothing held.
        let derived: Vec<_> = records.iter().filter(|r| r.form == "derived").collect();
        let names: Vec<&str> = derived.iter().map(|r| r.name.as_str()).collect();
        let want: &[&str] = match model {
            ModelName::Cnn => &["layer2.conv.input", "layer3.conv.input", "layer4.conv.input", "layer5.conv.input"],
            _ => &["layer2.conv.input"],
        };
        assert_eq!(names, want, "{model}: derived tensors");
        assert!(
            derived.iter().all(|r| r.fp32_bytes > 0 && r.stored_bytes == 0 && r.reserved_bytes == 0),
            "{derived:?}"
        );
        assert_eq!(derived[0].derived_from.as_deref(), Some("layer1.bn.input"), "{derived:?}");
    }
    // A budget the model cannot meet is refused, naming the largest ratio it can reach.
    let mut s = session(&ctx, ModelName::Tiny, 8, Some("fdsr:ratio=16"), None);
    let e = block_on(s.step(&ctx)).unwrap_err().to_string();
    assert!(e.contains("fc.input") && e.contains("largest ratio reachable"), "{e}");
}

/// Parameters after `steps` steps of a fresh run, and the pool's peak over them.
fn run(model: ModelName, batch: usize, policy: &str, probe: Option<u64>, steps: usize) -> Option<(Vec<f32>, u64)> {
    let ctx = common::gpu()?;
    let mut s = session(&ctx, model, batch, Some(policy), probe);
    ctx.pool.reset_peaks();
    for _ in 0..steps {
        block_on(s.step(&ctx)).unwrap();
    }
    let peak = ctx.pool.report().peak_total;
    let mut params = Vec::new();
    s.trainer.model.visit(&mut |p| params.extend(block_on(p.value.to_vec(&ctx)).unwrap()));
    Some((params, peak))
}

#[test]
fn the_probe_leaves_the_run_as_it_was_and_under_its_peak() {
    // uniform:2 has nothing to adapt: its probe only measures, so the weights (and batch-norm
    // running statistics) must come out the same with and without it. On `cnn` at batch 48 the
    // first weight gradients reduce over 49,152 values: where a step left any of a gradient
    // unwritten (as llvmpipe's loop limit once did), the probe's gradient would train instead.
    for (model, batch, steps) in [(ModelName::Tiny, 16, 4), (ModelName::Cnn, 48, 2)] {
        let Some((plain, plain_peak)) = run(model, batch, "uniform:2", None, steps) else { return };
        let Some((probed, probed_peak)) = run(model, batch, "uniform:2", Some(2), steps) else { return };
        assert_eq!(plain, probed, "{model}: the probe changed the run");
        assert!(probed_peak <= plain_peak, "{model}: the probe raised the peak: {probed_peak} > {plain_peak}");
    }
}

#[test]
fn the_probe_spread_compares_two_rounding_seeds_with_the_exact_gradient_and_each_other() {
    let Some(ctx) = common::gpu() else { return };
    for policy in ["uniform:2", "lossless"] {
        let mut s = session(&ctx, ModelName::Tiny, 16, Some(policy), None);
        block_on(s.step(&ctx)).unwrap();
        let (x, y) = s.next_batch().unwrap();
        let pairs = block_on(s.trainer.probe_spread(&ctx, &x, &y)).unwrap();
        let mut perturbed = 0;
        for [a, b, d] in &pairs {
            assert!(a.name == b.name && b.name == d.name, "{pairs:?}");
            assert!(a.norm2 > 0.0 && a.norm2 == b.norm2 && d.norm2 == a.norm2, "{policy}: {pairs:?}");
            if policy == "lossless" {
                assert_eq!((a.diff2, b.diff2, d.diff2), (0.0, 0.0, 0.0), "{pairs:?}");
            } else if a.diff2 > 0.0 {
                perturbed += 1;
                // Two seeds round differently; the three gradients obey the triangle inequality.
                assert!(b.diff2 > 0.0 && d.diff2 > 0.0 && a.diff2 != b.diff2, "{pairs:?}");
                assert!(d.diff2.sqrt() <= (a.diff2.sqrt() + b.diff2.sqrt()) * (1.0 + 1e-4), "{pairs:?}");
            }
        }
        assert!(policy == "lossless" || perturbed > 0, "{pairs:?}");
    }
}

/// Stores an activation known to be ≥ 0 under `policy` and returns what the store gives back:
/// a ReLU's output with the ReLU's mask (`relu`), else one that no ReLU mask covers (a pooled one).
fn restore(ctx: &GpuContext, x: &[f32], shape: &[usize], policy: &str, relu: bool) -> Vec<f32> {
    use fdsr::engine::saved::{Kind, SavedActivations};
    use fdsr::engine::tensor::{Sign, Tensor};
    let mut store = SavedActivations::with_policy(Some(policy.parse().unwrap())).unwrap();
    store.begin_step(7);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let t = Tensor::from_slice(ctx, x, shape, fdsr::gpu::Category::Workspace).unwrap();
    let sign = match relu {
        true => Sign::Masked(Box::new(fdsr::engine::ops::positive_mask(ctx, &mut enc, &t).unwrap().words)),
        false => Sign::NonNegative,
    };
    let t = t.with_sign(sign);
    store.save(1, 0, "layer1.conv.input", &t, Kind::Dense);
    store.flush(ctx, &mut enc).unwrap();
    let y = store.load(ctx, &mut enc, 1, 0).unwrap();
    ctx.queue.submit([enc.finish()]);
    block_on(y.to_vec(ctx)).unwrap()
}

#[test]
fn mask_zeros_restores_exact_zeros_without_the_clamp_bias() {
    let Some(ctx) = common::gpu() else { return };
    let (n, c, h) = (4, 8, 32);
    let images = fdsr::bench::activations::smooth_images(n, h, h, 3);
    let x = fdsr::bench::activations::conv3x3_relu(&images, n, h, h, c, 9);
    let shape = [n, c, h, h];
    // Fixed bits, every band kept: a dropped band's own bias would hide the clamp's.
    let clamped = restore(&ctx, &x, &shape, "fdsr:bits=8,3,2,2,mask=clamp", false);
    let zeros = restore(&ctx, &x, &shape, "fdsr:bits=8,3,2,2,mask=zeros", false);
    let positive = x.iter().filter(|v| **v > 0.0).count();
    assert!(positive > x.len() / 8 && positive < x.len(), "a ReLU output with zeros: {positive} of {}", x.len());
    // Both keep the exact zeros; only the clamp keeps every value ≥ 0.
    for (i, &v) in x.iter().enumerate() {
        if v == 0.0 {
            assert_eq!((clamped[i], zeros[i]), (0.0, 0.0), "value {i}");
        }
    }
    assert!(clamped.iter().all(|v| *v >= 0.0));
    assert!(zeros.iter().any(|v| *v < 0.0), "the rounding noise is kept, negative part included");
    // The clamp biases the kept values upward; without it the mean error is far smaller.
    let bias = |y: &[f32]| x.iter().zip(y).map(|(a, b)| f64::from(b - a)).sum::<f64>() / positive as f64;
    let (bc, bz) = (bias(&clamped), bias(&zeros));
    assert!(bc > 0.0 && bz.abs() < bc / 2.0, "mean error per kept value: clamped {bc}, zeros {bz}");
    // `mask` keeps no own mask (this tensor has no ReLU mask): its zeros are not restored.
    let shared = restore(&ctx, &x, &shape, "fdsr:budget=2.5,mask,grad", false);
    assert!(x.iter().zip(&shared).any(|(a, b)| *a == 0.0 && *b != 0.0), "no mask re-applied");
    // A ReLU's output under `mask` gets the ReLU's mask back: exact zeros, no clamp.
    let relu = restore(&ctx, &x, &shape, "fdsr:bits=8,3,2,2,mask", true);
    assert_eq!(relu, zeros, "the ReLU's mask does what an own mask does");
}
