//! Quantized-compute simulation in training: `tiny` on synthetic images under static, PFQ, DFQ
//! and DPC precision (alone and with compressed saved activations) trains with a finite loss and
//! counts BitOPs saved against static fw=8/bw=16; DFQ's cost regularizer moves the gates toward
//! cheap or expensive options as its target asks; PFQ and DFQ runs resumed from a checkpoint
//! (PFQ's schedule advanced by the training or the validation loss on both sides of it, and the
//! training loss summed across it) end exactly as the uninterrupted runs.

mod common;

use fdsr::data::synthetic;
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{checkpoint, ModelName, Session, TrainConfig, Trainer};
use fdsr::io::safetensors::SafeTensors;
use fdsr::GpuContext;

fn config(policy: Option<&str>) -> TrainConfig {
    TrainConfig {
        model: ModelName::Tiny,
        epochs: 2,
        batch: 8,
        lr: 0.02,
        schedule: Schedule::Cosine,
        opt: OptConfig::defaults(OptKind::Sgd),
        seed: 5,
        augment: false,
        policy: policy.map(|p| p.parse().unwrap()),
        compute: fdsr::gpu::Compute::Fp32,
    }
}

fn session(ctx: &GpuContext, cfg: TrainConfig, precision: &str) -> Session {
    let mut s = Session::new(Trainer::new(ctx, cfg).unwrap(), synthetic::images(24, 28, 28, 10, 3)).unwrap();
    s.trainer.set_controller(None).unwrap();
    s.set_precision(ctx, Some(precision.parse().unwrap())).unwrap();
    s
}

fn weights(ctx: &GpuContext, s: &Session) -> Vec<f32> {
    let mut out = Vec::new();
    s.trainer.model.visit(&mut |p| out.extend(pollster::block_on(p.value.to_vec(ctx)).unwrap()));
    out
}

/// One step, then PFQ's plateau rule is checked where due (`val` is the validation split).
fn step(ctx: &GpuContext, s: &mut Session, val: &fdsr::data::Dataset) {
    pollster::block_on(s.step(ctx)).unwrap();
    if let Some(c) = pollster::block_on(s.check_precision(ctx, Some(val))).unwrap() {
        assert!(c.loss.is_finite() && c.step == s.trainer.step);
    }
}

#[test]
fn precision_policies_train_and_save_bitops() {
    let Some(ctx) = common::gpu() else { return };
    let eval = synthetic::images(8, 28, 28, 10, 77);
    for (prec, saved) in [
        ("static:fw=8,bw=16", None),
        ("fractrain-pfq", None),
        // On tiny with full-precision ends only layer2.conv is quantized, and a single layer gets
        // DPC's top bits (8/16, as static): quantize all three layers so capacities differ.
        ("dpc:full-ends=0", None),
        ("dpc:full-ends=0", Some("fdsr:budget=4,mask")),
        ("fractrain-pfq", Some("uniform:2")),
        // Weights kept fp32: activations at 3 and gradients at 6 bits still beat 8/8/16 (the
        // last stage, 8/8 with fp32 weights, would not: no final stretch).
        ("fractrain-pfq:weights=0;final=0", None),
        ("fractrain-pfq:signal=val", None),
        // Every option of the default costs less than 8/8/16.
        ("fractrain-dfq", None),
        ("fractrain-dfq:full-ends=0", Some("fdsr:budget=4")),
    ] {
        let mut s = session(&ctx, config(saved), prec);
        while !s.done() {
            step(&ctx, &mut s, &eval);
        }
        let m = pollster::block_on(s.trainer.read_metrics(&ctx)).unwrap();
        let p = &s.trainer.precision;
        let saved_frac = p.saved_vs_static().unwrap();
        eprintln!(
            "{prec} + {saved:?}: loss {:.4}, BitOPs {:.4e}, saved vs static 8/16 {saved_frac:.4}",
            m.loss, p.bitops
        );
        assert!(m.loss.is_finite(), "{prec}: loss {}", m.loss);
        assert!(p.bitops > 0.0);
        if prec.starts_with("static") {
            assert!(saved_frac.abs() < 1e-12, "static 8/16 against itself: {saved_frac}");
        } else {
            assert!(saved_frac > 0.0, "{prec} saves {saved_frac}");
        }
    }
}

/// The gate bias of `layer2.conv` (tiny's one gated layer).
fn gate_bias(ctx: &GpuContext, s: &Session) -> Vec<f32> {
    let mut out = Vec::new();
    s.trainer.model.visit(&mut |p| {
        if p.name == "layer2.conv.gate.bias" {
            out = pollster::block_on(p.value.to_vec(ctx)).unwrap();
        }
    });
    out
}

#[test]
fn dfq_gates_follow_the_cost_target() {
    let Some(ctx) = common::gpu() else { return };
    let eval = synthetic::images(8, 28, 28, 10, 79);
    // Options cost 0.4 and 1.0 of 8/16: a target below both pulls toward 4 bits, above both
    // toward 8; a strong regularizer outweighs the task's preference.
    let mut saved = Vec::new();
    for (target, cheap_wins) in [(0.1, true), (2.0, false)] {
        let prec = format!("fractrain-dfq:fw=4,8;bw=8,16;target={target};alpha=200");
        let mut s = session(&ctx, config(None), &prec);
        while !s.done() {
            step(&ctx, &mut s, &eval);
        }
        let b = gate_bias(&ctx, &s);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0] > b[1], cheap_wins, "target {target}: gate bias {b:?}");
        pollster::block_on(s.trainer.count_gates(&ctx)).unwrap();
        saved.push(s.trainer.precision.saved_vs_static().unwrap());
    }
    eprintln!("DFQ BitOPs saved against static 8/16: target 0.1 {:.4}, target 2.0 {:.4}", saved[0], saved[1]);
    assert!(saved[0] > saved[1], "{saved:?}");
}

#[test]
fn pfq_and_dfq_resume_is_exact() {
    let Some(ctx) = common::gpu() else { return };
    let eval = synthetic::images(8, 28, 28, 10, 78);
    // A plateau rule that turns quickly, checked after steps 1 to 3 of 6 (the final stretch
    // from step 5): the rule turns before the checkpoint (after step 3), the final stretch after
    // it; so does the rule reading the validation loss. Checked after steps 2 and 4 with no
    // final stretch, the training loss of step 3 is summed across the checkpoint.
    let pfq = "fractrain-pfq:window=2;threshold=0.5;decay=0.9;checks=6;final=0.2";
    let val = format!("{pfq};signal=val");
    let across = "fractrain-pfq:window=2;threshold=0.5;checks=3;final=0";
    for prec in [pfq, &val, across, "fractrain-dfq:alpha=5"] {
        let mut full = session(&ctx, config(None), prec);
        let mut stages = Vec::new();
        while !full.done() {
            step(&ctx, &mut full, &eval);
            stages.push(full.trainer.precision.pfq.as_ref().map_or(0, |p| p.stage));
        }
        assert_eq!(stages.len(), 6);
        if prec.starts_with("fractrain-pfq") {
            eprintln!("{prec}: stages {stages:?}");
        }
        if prec == pfq || prec == val {
            assert!(stages[5] == 3 && stages[2] > 0, "{prec}: stages {stages:?}: the schedule must turn on both sides");
        }
        if prec == across {
            assert_eq!(full.trainer.precision.pfq.as_ref().unwrap().cadence.every, 2);
        }

        let mut first = session(&ctx, config(None), prec);
        for _ in 0..3 {
            step(&ctx, &mut first, &eval);
        }
        let bytes = pollster::block_on(checkpoint::save(&ctx, &mut first.trainer, &[])).unwrap().to_bytes().unwrap();
        drop(first);
        let st = SafeTensors::from_bytes(&bytes).unwrap();
        if prec == across {
            // Step 3's loss (8 images, 1 step) is summed on the device, unread, in the checkpoint.
            assert!(st.meta("metric_sums").unwrap().ends_with(",8,1"), "{:?}", st.meta("metric_sums"));
        }

        // Another precision policy, or none, is refused.
        for other in [Some("dpc"), None] {
            let mut s =
                Session::new(Trainer::new(&ctx, config(None)).unwrap(), synthetic::images(24, 28, 28, 10, 3)).unwrap();
            s.set_precision(&ctx, other.map(|p| p.parse().unwrap())).unwrap();
            let e = checkpoint::restore(&ctx, &mut s.trainer, &st).unwrap_err().to_string();
            assert!(e.contains("precision policy"), "{e}");
            assert_eq!(s.trainer.step, 0);
        }

        let mut resumed = session(&ctx, config(None), prec);
        checkpoint::restore(&ctx, &mut resumed.trainer, &st).unwrap();
        while !resumed.done() {
            step(&ctx, &mut resumed, &eval);
        }
        for s in [&mut resumed, &mut full] {
            pollster::block_on(s.trainer.count_gates(&ctx)).unwrap();
        }
        let (a, b) = (&resumed.trainer.precision, &full.trainer.precision);
        assert_eq!(a.pfq, b.pfq);
        assert_eq!((a.bitops, a.baseline_bitops), (b.bitops, b.baseline_bitops), "{prec}");
        assert_eq!(weights(&ctx, &resumed), weights(&ctx, &full), "{prec}: resumed weights differ");
    }
}
