//! The optimizer over the parameter arena: one dispatch per step whatever the number of
//! parameters, the same bits as one update per parameter tensor, the split kernels against the
//! reference, and views that read, write and copy only their own range.

mod common;

use common::rand;
use fdsr::data::synthetic;
use fdsr::engine::model::Model;
use fdsr::engine::ops::{self, optim as op, AdamParams, SgdParams};
use fdsr::engine::optim::Schedule;
use fdsr::engine::optim::{OptConfig, OptKind, Optimizer};
use fdsr::engine::{ModelName, Session, Tensor, TrainConfig, Trainer};
use fdsr::gpu::Category;
use fdsr::reference::nn_train as rt;
use fdsr::GpuContext;

fn enc(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
}

fn read(ctx: &GpuContext, t: &Tensor) -> Vec<f32> {
    pollster::block_on(t.to_vec(ctx)).unwrap()
}

fn up(ctx: &GpuContext, v: &[f32]) -> Tensor {
    Tensor::from_slice(ctx, v, &[v.len()], Category::Workspace).unwrap()
}

/// Asserts the same bits, naming the first value that differs.
fn same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a.to_bits() != b.to_bits()) {
        panic!("{what}: value {i} is {} instead of {}", got[i], want[i]);
    }
}

/// Writes seeded random gradients into every trainable parameter's gradient.
fn random_grads(ctx: &GpuContext, model: &Model, seed: u64) {
    let mut k = 0;
    model.visit(&mut |p| {
        if let Some(g) = &p.grad {
            g.write(ctx, &rand(g.numel(), seed * 1000 + k)).unwrap();
            k += 1;
        }
    });
}

/// Per trainable parameter: its decay flag and standalone copies of (value, grad, state 1, state 2).
fn per_tensor_copies(ctx: &GpuContext, model: &Model, opt: &Optimizer) -> Vec<(bool, [Tensor; 4])> {
    let mut params = Vec::new();
    model.visit(&mut |p| {
        if let Some(g) = &p.grad {
            params.push((p.decay, p.value.clone(), g.clone()));
        }
    });
    let copy = |t: &Tensor| up(ctx, &read(ctx, t));
    params
        .into_iter()
        .zip(&opt.state)
        .map(|((decay, v, g), (_, s1, s2))| {
            let s2 = s2.as_ref().map_or_else(|| up(ctx, &[0.0]), copy);
            (decay, [copy(&v), copy(&g), copy(s1), s2])
        })
        .collect()
}

#[test]
fn the_update_is_one_dispatch_whatever_the_number_of_parameters() {
    let Some(ctx) = common::gpu() else { return };
    for (name, tensors) in [(ModelName::Tiny, 8), (ModelName::Cnn, 17), (ModelName::Resnet20, 65)] {
        for kind in [OptKind::Sgd, OptKind::AdamW] {
            let mut model = Model::new(&ctx, name, 1).unwrap();
            let mut opt = Optimizer::new(&ctx, &mut model, OptConfig::defaults(kind)).unwrap();
            assert_eq!(opt.state.len(), tensors, "{name} trainable tensors");
            let (arena, align) = (opt.arena(), u64::from(ctx.limits.min_storage_buffer_offset_alignment));
            assert_eq!(arena.slots.len(), tensors);
            assert!(arena.slots.iter().all(|s| (s.first as u64 * 4).is_multiple_of(align)), "{name}: aligned views");
            let values: usize = arena.slots.iter().map(|s| s.shape.iter().product::<usize>()).sum();
            assert_eq!(values, model.parameter_count());
            eprintln!("{name}: {values} values in an arena of {} (alignment {align} bytes)", arena.values.numel());
            let before = ctx.transfers.snapshot();
            let mut e = enc(&ctx);
            opt.step(&ctx, &mut e, &mut model, 0.1).unwrap();
            ctx.queue.submit([e.finish()]);
            let d = ctx.transfers.snapshot().since(&before);
            assert_eq!(d.dispatches, 1, "{name} {kind}: dispatches of one update");
            assert!(d.uploaded <= 64, "{name} {kind}: only the kernel's parameters go up ({} bytes)", d.uploaded);
        }
    }
}

#[test]
fn the_arena_update_equals_one_update_per_tensor_bit_for_bit() {
    let Some(ctx) = common::gpu() else { return };
    for name in [ModelName::Tiny, ModelName::Cnn] {
        for kind in [OptKind::Sgd, OptKind::AdamW] {
            let mut model = Model::new(&ctx, name, 5).unwrap();
            let c = OptConfig::defaults(kind);
            let mut opt = Optimizer::new(&ctx, &mut model, c).unwrap();
            for step in 1..=3u32 {
                random_grads(&ctx, &model, u64::from(step));
                let lr = 0.05 / step as f32;
                let copies = per_tensor_copies(&ctx, &model, &opt);
                let mut e = enc(&ctx);
                for (decay, [v, g, s1, s2]) in &copies {
                    let weight_decay = if *decay { c.weight_decay } else { 0.0 };
                    match kind {
                        OptKind::Sgd => {
                            let h = SgdParams { lr, momentum: c.momentum, weight_decay, nesterov: c.nesterov };
                            ops::sgd_step(&ctx, &mut e, v, g, Some(s1), h).unwrap();
                        }
                        OptKind::AdamW => {
                            let h = AdamParams { lr, beta1: c.beta1, beta2: c.beta2, eps: c.eps, weight_decay, step };
                            ops::adamw_step(&ctx, &mut e, v, g, s1, s2, h).unwrap();
                        }
                    }
                }
                opt.step(&ctx, &mut e, &mut model, lr).unwrap();
                ctx.queue.submit([e.finish()]);
                let mut values = Vec::new();
                model.visit(&mut |p| {
                    if p.grad.is_some() {
                        values.push((p.name.clone(), p.value.clone()));
                    }
                });
                for (((name, v), (_, [want, _, s1, s2])), (_, got1, got2)) in values.iter().zip(&copies).zip(&opt.state)
                {
                    let what = format!("{kind} step {step} {name}");
                    same_bits(&read(&ctx, v), &read(&ctx, want), &format!("{what}: values"));
                    same_bits(&read(&ctx, got1), &read(&ctx, s1), &format!("{what}: first state"));
                    if let Some(got2) = got2 {
                        same_bits(&read(&ctx, got2), &read(&ctx, s2), &format!("{what}: second state"));
                    }
                }
            }
        }
    }
}

#[test]
fn split_steps_decay_only_their_leading_range_as_the_reference_does() {
    let Some(ctx) = common::gpu() else { return };
    let (n, decayed) = (1000, 600);
    let close = |got: &[f32], want: &[f32], what: &str| {
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}[{i}]: {a} vs {b}");
        }
    };
    let h = SgdParams { lr: 0.05, momentum: 0.9, weight_decay: 0.1, nesterov: true };
    let (mut w, mut buf) = (rand(n, 1), vec![0f32; n]);
    let (wt, bt) = (up(&ctx, &w), up(&ctx, &buf));
    let adam = |step| AdamParams { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.1, step };
    let (mut aw, mut m, mut v) = (rand(n, 2), vec![0f32; n], vec![0f32; n]);
    let (awt, mt, vt) = (up(&ctx, &aw), up(&ctx, &m), up(&ctx, &v));
    for step in 1..=3u32 {
        let g = rand(n, 10 + u64::from(step));
        let gt = up(&ctx, &g);
        let mut e = enc(&ctx);
        op::sgd_step_split(&ctx, &mut e, (&wt, &gt, Some(&bt)), h, decayed).unwrap();
        op::adamw_step_split(&ctx, &mut e, [&awt, &gt, &mt, &vt], adam(step), decayed).unwrap();
        ctx.queue.submit([e.finish()]);
        let (gd, gr) = g.split_at(decayed);
        let (wd, wr) = w.split_at_mut(decayed);
        let (bd, br) = buf.split_at_mut(decayed);
        rt::sgd_step(wd, gd, bd, h);
        rt::sgd_step(wr, gr, br, SgdParams { weight_decay: 0.0, ..h });
        let (ad, ar) = aw.split_at_mut(decayed);
        let ((md, mr), (vd, vr)) = (m.split_at_mut(decayed), v.split_at_mut(decayed));
        rt::adamw_step(ad, gd, md, vd, adam(step));
        rt::adamw_step(ar, gr, mr, vr, AdamParams { weight_decay: 0.0, ..adam(step) });
    }
    close(&read(&ctx, &wt), &w, "sgd values");
    close(&read(&ctx, &bt), &buf, "sgd momentum");
    close(&read(&ctx, &awt), &aw, "adamw values");
    close(&read(&ctx, &mt), &m, "adamw m");
    close(&read(&ctx, &vt), &v, "adamw v");
}

#[test]
fn views_read_write_and_copy_only_their_range() {
    let Some(ctx) = common::gpu() else { return };
    let base = up(&ctx, &[1.0; 192]);
    let a = base.view(64, &[2, 3], 256).unwrap();
    assert!(a.is_view() && a.offset() == 256);
    a.write(&ctx, &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
    assert_eq!(read(&ctx, &a), vec![2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let all = read(&ctx, &base);
    assert_eq!(all[63..71], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 1.0]);
    let b = base.view(128, &[6], 256).unwrap();
    let mut e = enc(&ctx);
    assert!(a.copy_to(&mut e, &b).is_err(), "wgpu copies between two buffers only");
    let other = up(&ctx, &[0.0; 70]).view(64, &[6], 256).unwrap();
    let plain = up(&ctx, &[0.0; 6]);
    a.copy_to(&mut e, &other).unwrap();
    other.copy_to(&mut e, &plain).unwrap();
    ops::add_into(&ctx, &mut e, &b, &other).unwrap();
    // A kernel binds the view's range only: the sum lands in `b`'s six values.
    ops::add_into(&ctx, &mut e, &b, &up(&ctx, &[10.0; 6])).unwrap();
    ctx.queue.submit([e.finish()]);
    assert_eq!(read(&ctx, &plain), vec![2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let all = read(&ctx, &base);
    assert_eq!(all[127..135], [1.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 1.0]);
    assert!(a.overlaps(&base) && !a.overlaps(&b));
    assert!(base.view(64, &[2, 3], 512).is_err(), "misaligned view");
    assert!(base.view(190, &[3], 4).is_err(), "view past the end");
    assert!(ops::add_into(&ctx, &mut enc(&ctx), &base, &a).is_err(), "overlapping operands");
}

#[test]
fn an_optimizer_refuses_a_model_it_did_not_pack() {
    let Some(ctx) = common::gpu() else { return };
    let mut model = Model::new(&ctx, ModelName::Tiny, 1).unwrap();
    let mut opt = Optimizer::new(&ctx, &mut model, OptConfig::defaults(OptKind::Sgd)).unwrap();
    let mut other = Model::new(&ctx, ModelName::Tiny, 1).unwrap();
    let err = opt.step(&ctx, &mut enc(&ctx), &mut other, 0.1).unwrap_err();
    assert!(err.to_string().contains("arena"), "{err}");
    assert_eq!(opt.steps, 0, "a refused update counts no step");
    // Packing again (as installing DFQ gates does) keeps the values.
    let mut values = Vec::new();
    model.visit(&mut |p| values.extend(read(&ctx, &p.value)));
    let opt2 = Optimizer::new(&ctx, &mut model, OptConfig::defaults(OptKind::AdamW)).unwrap();
    let mut again = Vec::new();
    model.visit(&mut |p| again.extend(read(&ctx, &p.value)));
    same_bits(&again, &values, "repacking keeps every value");
    assert!(opt.step(&ctx, &mut enc(&ctx), &mut model, 0.1).is_err(), "the old arena is no longer the model's");
    assert_eq!(opt2.state.len(), 8);
}

#[test]
fn a_training_step_updates_with_one_dispatch_also_with_dfq_gates() {
    let Some(ctx) = common::gpu() else { return };
    for (kind, precision) in [(OptKind::Sgd, None), (OptKind::AdamW, Some("fractrain-dfq:full-ends=0"))] {
        let cfg = TrainConfig {
            model: ModelName::Tiny,
            epochs: 1,
            batch: 8,
            lr: 0.02,
            schedule: Schedule::Constant,
            opt: OptConfig::defaults(kind),
            seed: 5,
            augment: false,
            policy: None,
            compute: fdsr::gpu::Compute::Fp32,
        };
        let mut s = Session::new(Trainer::new(&ctx, cfg).unwrap(), synthetic::images(16, 28, 28, 10, 3)).unwrap();
        s.trainer.set_controller(None).unwrap();
        if let Some(p) = precision {
            s.set_precision(&ctx, Some(p.parse().unwrap())).unwrap();
        }
        let (mut tensors, mut gates) = (0, 0);
        s.trainer.model.visit(&mut |p| {
            tensors += usize::from(p.grad.is_some());
            gates += usize::from(p.grad.is_some() && p.name.contains(".gate."));
        });
        assert_eq!(gates > 0, precision.is_some(), "{kind}: DFQ gates are trainable parameters");
        pollster::block_on(ctx.profiler.collect(&ctx)).unwrap();
        for _ in 0..2 {
            pollster::block_on(s.step(&ctx)).unwrap();
        }
        let work = pollster::block_on(ctx.profiler.collect(&ctx)).unwrap().work;
        let entry = if kind == OptKind::Sgd { "sgd_step" } else { "adamw_step" };
        let updates = work.get(entry).map_or(0, |w| w.dispatches);
        assert_eq!(updates, 2, "{kind}: two steps, {tensors} trainable tensors, one update dispatch each");
    }
}
