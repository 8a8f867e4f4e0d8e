//! Checkpoints: a run interrupted mid-epoch and resumed from its checkpoint ends with the same
//! weights as an uninterrupted run; checkpoints of another model or run are refused.

mod common;

use fdsr::data::synthetic;
use fdsr::engine::controller::ControllerConfig;
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{checkpoint, ModelName, Session, TrainConfig, Trainer};
use fdsr::io::safetensors::SafeTensors;
use fdsr::GpuContext;

fn config(opt: OptKind) -> TrainConfig {
    TrainConfig {
        model: ModelName::Tiny,
        epochs: 2,
        batch: 8,
        lr: 0.05,
        schedule: Schedule::Cosine,
        opt: OptConfig::defaults(opt),
        seed: 9,
        augment: true,
        policy: None,
        compute: fdsr::gpu::Compute::Fp32,
    }
}

fn session(ctx: &GpuContext, cfg: TrainConfig) -> Session {
    Session::new(Trainer::new(ctx, cfg).unwrap(), synthetic::images(20, 28, 28, 10, 4)).unwrap()
}

fn weights(ctx: &GpuContext, s: &Session) -> Vec<f32> {
    let mut out = Vec::new();
    s.trainer.model.visit(&mut |p| out.extend(pollster::block_on(p.value.to_vec(ctx)).unwrap()));
    out
}

fn run_to_end(ctx: &GpuContext, s: &mut Session) {
    while !s.done() {
        pollster::block_on(s.step(ctx)).unwrap();
    }
}

#[test]
fn resumed_run_matches_uninterrupted_run() {
    let Some(ctx) = common::gpu() else { return };
    let mut probed = config(OptKind::Sgd);
    probed.policy = Some("fdsr:budget=4,mask,realloc".parse().unwrap());
    // The third run compresses under a budget controller probing every other step (a probe
    // before the checkpoint and one after it): its state travels in the checkpoint.
    for cfg in [config(OptKind::Sgd), config(OptKind::AdamW), probed] {
        let start = || {
            let mut s = session(&ctx, cfg.clone());
            if s.trainer.controller.is_some() {
                s.trainer.set_controller(Some(ControllerConfig { every: 2, ..ControllerConfig::default() })).unwrap();
            }
            s
        };
        let mut full = start();
        assert_eq!(full.steps_per_epoch(), 2);
        run_to_end(&ctx, &mut full);

        let mut first = start();
        for _ in 0..3 {
            pollster::block_on(first.step(&ctx)).unwrap();
        }
        let bytes = pollster::block_on(checkpoint::save(&ctx, &mut first.trainer, &[])).unwrap().to_bytes().unwrap();
        drop(first); // the "killed" run

        let mut resumed = start();
        checkpoint::restore(&ctx, &mut resumed.trainer, &SafeTensors::from_bytes(&bytes).unwrap()).unwrap();
        assert_eq!(resumed.trainer.step, 3);
        run_to_end(&ctx, &mut resumed);
        let what = format!("{} {:?}", cfg.opt.kind, cfg.policy);
        assert_eq!(weights(&ctx, &resumed), weights(&ctx, &full), "{what}: resumed weights differ");
    }
}

#[test]
fn foreign_checkpoints_are_refused_without_changes() {
    let Some(ctx) = common::gpu() else { return };
    let mut s = session(&ctx, config(OptKind::Sgd));
    let st = pollster::block_on(checkpoint::save(&ctx, &mut s.trainer, &[])).unwrap();
    let mut other = config(OptKind::Sgd);
    other.lr = 0.1;
    let mut t = Trainer::new(&ctx, other).unwrap();
    let e = checkpoint::restore(&ctx, &mut t, &st).unwrap_err();
    assert!(e.to_string().contains("differs"), "{e}");
    let mut cnn = config(OptKind::Sgd);
    cnn.model = ModelName::Cnn;
    let mut t = Trainer::new(&ctx, cnn).unwrap();
    let e = checkpoint::restore(&ctx, &mut t, &st).unwrap_err();
    assert!(e.to_string().contains("model tiny"), "{e}");
    let mut broken = st.clone();
    broken.tensors.retain(|n| n.name != "fc.bias");
    let mut t = Trainer::new(&ctx, config(OptKind::Sgd)).unwrap();
    assert!(checkpoint::restore(&ctx, &mut t, &broken).is_err());
    assert_eq!(t.step, 0);
}

/// A checkpoint written by the hand-written safetensors writer that fdsr had before it used the
/// `safetensors` crate (commit 1857a6f; the same run as `probed` above with its budget of 2 bits,
/// saved after step 3) still loads: every tensor lands on the device, and the controller's
/// budgets come back. Its `,mask` is today's `,mask=clamp` and its budget reallocated
/// (`,realloc` today): a run with today's `,mask` is refused.
/// A budget now bounds everything a step holds, which `tiny` cannot meet at 2 bits: the next
/// step says so instead of running with another meaning.
#[test]
fn checkpoint_written_before_the_crate_still_resumes() {
    let Some(ctx) = common::gpu() else { return };
    let bytes = include_bytes!("fixtures/tiny-checkpoint-v1.safetensors");
    let st = SafeTensors::from_bytes(bytes).unwrap();
    let mut cfg = config(OptKind::Sgd);
    cfg.policy = Some("fdsr:budget=2,mask".parse().unwrap());
    let mut other = session(&ctx, cfg.clone());
    let e = checkpoint::restore(&ctx, &mut other.trainer, &st).unwrap_err().to_string();
    assert!(e.contains("policy=fdsr:budget=2,mask=clamp,realloc) differs"), "{e}");
    cfg.policy = Some("fdsr:budget=2,mask=clamp,realloc".parse().unwrap());
    let mut s = session(&ctx, cfg);
    s.trainer.set_controller(Some(ControllerConfig { every: 2, ..ControllerConfig::default() })).unwrap();
    checkpoint::restore(&ctx, &mut s.trainer, &st).unwrap();
    assert_eq!(s.trainer.step, 3);
    let mut params = Vec::new();
    s.trainer.model.visit(&mut |p| params.push((p.name.clone(), p.value.clone())));
    for (name, value) in params {
        assert_eq!(pollster::block_on(value.to_vec(&ctx)).unwrap(), st.f32(&name).unwrap(), "{name}");
    }
    let budgets = s.trainer.controller.as_ref().unwrap().budgets().clone();
    assert_eq!(budgets.get("layer2.bn.input").copied(), Some(4.0), "{budgets:?}");
    let e = pollster::block_on(s.step(&ctx)).unwrap_err().to_string();
    assert!(
        e.contains("fdsr:budget=2,mask=clamp,realloc cannot be met") && e.contains("largest ratio reachable"),
        "{e}"
    );
    assert_eq!(s.trainer.step, 3);
}
