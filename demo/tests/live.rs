//! The visualizer on the GPU without a window: real training steps through the app's frames —
//! the policy run and the fp32 run in turn — and the panels' data (curves, bits per band, tile
//! classes, the codec story, the frontier) filled from them.

use std::cell::RefCell;
use std::rc::Rc;

use fdsr_demo::{data, App, Run, Settings};

/// The training device, or `None` (with a message) without an adapter unless `REQUIRE_GPU=1`.
fn gpu() -> Option<fdsr::GpuContext> {
    match pollster::block_on(fdsr::GpuContext::new()) {
        Ok(c) => Some(c),
        Err(e) if std::env::var("REQUIRE_GPU").as_deref() == Ok("1") => panic!("REQUIRE_GPU=1 but {e}"),
        Err(e) => {
            eprintln!("skipped: no GPU adapter ({e})");
            None
        }
    }
}

#[test]
fn frames_train_and_fill_the_panels() {
    let Some(ctx) = gpu() else { return };
    let (settings, notices) = Settings::from_query("model=tiny&policy=fdsr&batch=16");
    assert!(notices.is_empty(), "{notices:?}");
    let run = Run::new(ctx, data::synthetic(64, 16), settings.clone());
    let slot = Rc::new(RefCell::new(Some(Ok(run.clone()))));
    let mut app = App::new(slot, settings, Vec::new());
    let egui_ctx = egui::Context::default();
    let mut shapes = 0;
    for _ in 0..12 {
        let mut out = egui_ctx.run_ui(egui::RawInput::default(), |ui| app.frame(ui));
        shapes = out.shapes.len();
        out.textures_delta.clear(); // no renderer here to apply them
    }
    let base = app.base().expect("the fp32 run");
    let status = app.status().expect("both runs");
    let sh = run.shared.borrow();
    assert!(sh.error.is_none(), "{:?}", sh.error);
    let h = &sh.history;
    assert!(h.steps.len() >= 5, "one step per frame, in turn: {} steps", h.steps.len());
    let bh = &base.shared.borrow().history;
    assert!(bh.steps.len() + 1 >= h.steps.len(), "the fp32 run keeps up: {} steps", bh.steps.len());
    assert!(bh.last().unwrap().records.iter().all(|r| r.form == "fp32" || r.form == "packed"));
    // The same seed and batches: the first step's loss is the same in both runs.
    assert!((bh.steps[0].loss - h.steps[0].loss).abs() < 1e-6, "{} vs {}", bh.steps[0].loss, h.steps[0].loss);
    assert!(status.story_bands > 0 && status.story_bytes > 0, "{status:?}");
    assert!(status.frontier_points > 0, "{status:?}");
    // Under the 64 MiB cap, compressed activations fit more images than fp32.
    assert!(status.cap_batch > status.cap_batch_fp32 && status.cap_batch_fp32 > 0, "{status:?}");
    assert!(status.story_map[2] > 0.0 && status.story_plane[0] >= 8, "the feature map is drawn: {status:?}");
    assert!(h.loss().iter().all(|p| p[1].is_finite()));
    let last = h.last().unwrap();
    let bn2 = last.records.iter().find(|r| r.name == "layer2.bn.input").expect("records of the step");
    assert_eq!(bn2.bits.len(), fdsr::rules::config::DEFAULT_BAND_EDGES.len() - 1, "{bn2:?}");
    assert!(bn2.classes.iter().sum::<u64>() > 0, "{bn2:?}");
    assert!(shapes > 50, "the frame drew only {shapes} shapes");
    drop(sh);
    // The codec story reads the first layer's output on the test images.
    pollster::block_on(run.inspect_task(0).expect("no step is running"));
    let sh = run.shared.borrow();
    let a = sh.inspect.as_ref().expect("inspected").as_ref().expect("an activation map");
    assert_eq!((a.layer, a.shape[0]), (0, fdsr_demo::activation::IMAGES));
    assert_eq!(a.data.len(), a.shape.iter().product::<usize>());
    assert!(a.data.iter().all(|v| v.is_finite()) && a.data.iter().any(|&v| v != 0.0));
    drop(sh);
    // The frontier's live point: test accuracy on the held-out images, evaluated by the frames
    // after the first step and again on request.
    let evals = run.shared.borrow().history.tests.len();
    assert!(evals >= 1 && status.test_evals == evals, "{status:?}");
    pollster::block_on(run.eval_task().expect("no step is running"));
    let sh = run.shared.borrow();
    assert!(sh.error.is_none(), "{:?}", sh.error);
    let t = *sh.history.tests.last().expect("an evaluation");
    assert_eq!(sh.history.tests.len(), evals + 1);
    assert_eq!(t.step, sh.history.last().unwrap().step, "evaluated after the last step");
    assert_eq!(t.images, run.eval.len() as u64);
    assert_eq!(run.eval.len(), 16usize.min(fdsr_demo::run::EVAL_IMAGES), "the held-out images are the test set's");
    // The accuracy counts whole images right.
    let right = t.accuracy * t.images as f64;
    assert!((0.0..=1.0).contains(&t.accuracy) && (right - right.round()).abs() < 1e-3, "{t:?}");
    assert!(t.loss.is_finite() && t.loss > 0.0 && t.seconds > 0.0, "{t:?}");
}

#[test]
fn a_bad_url_hash_falls_back_to_defaults_with_a_message() {
    let (s, notices) = Settings::from_query("model=vgg&batch=zero");
    assert_eq!(s.to_query(), Settings::from_query("").0.to_query());
    assert_eq!(notices.len(), 2, "{notices:?}");
}

#[test]
fn the_memory_preset_holds_tens_of_mib() {
    let Some(ctx) = gpu() else { return };
    let (settings, notices) = Settings::from_query("preset=memory&policy=fdsr");
    assert!(notices.is_empty(), "{notices:?}");
    let run = Run::new(ctx, data::synthetic(64, 8), settings);
    pollster::block_on(run.step_task().expect("a fresh run may step"));
    let sh = run.shared.borrow();
    assert!(sh.error.is_none(), "{:?}", sh.error);
    let (fp32, held, _) = fdsr_demo::history::memory_gauge(sh.history.last().expect("one step"));
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "memory preset: saved activations {:.1} MiB fp32, {:.1} MiB held; fixed {:.2} MiB",
        mib(fp32),
        mib(held),
        mib(sh.fixed_bytes)
    );
    assert!(mib(fp32) >= 20.0, "fp32 saved activations of {:.1} MiB", mib(fp32));
    assert!(held * 3 < fp32, "compressed: {:.1} of {:.1} MiB", mib(held), mib(fp32));
    assert!(sh.fixed_bytes > 0 && sh.fixed_bytes < fp32, "{}", sh.fixed_bytes);
}
