//! The DFQ kernels against `reference::gate` and `reference::fakequant` on random inputs:
//! per-input fake quantization, the gate's forward (means, noisy softmax, choices, counts) in
//! training and evaluation, and its backward to the gate's weight and bias gradients.

mod common;

use common::{close, rand, read, up};

use fdsr::engine::ops::{self, Bits};
use fdsr::engine::precision::DfqPlan;
use fdsr::reference::fakequant::{fake_quant_per_input, min_max, stream};
use fdsr::reference::gate::{self, GateCost, GateShape};

fn plan() -> DfqPlan {
    DfqPlan { fw: vec![2, 4, 8], bw: vec![6, 8, 8], costs: vec![0.3, 0.5, 0.9], target: 0.4, alpha: 3.0, tau: 0.8 }
}

fn words(ctx: &fdsr::GpuContext, w: &[u32]) -> fdsr::engine::Tensor {
    let f: Vec<f32> = w.iter().map(|&v| f32::from_bits(v)).collect();
    up(ctx, &f, &[w.len()])
}

fn unwords(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn per_input_fake_quant_matches_reference() {
    let Some(ctx) = common::gpu() else { return };
    let (n, per) = (7, 300);
    let x: Vec<f32> = rand(n * per, 5).iter().map(|v| v * 2.0 + 0.3).collect();
    let choice = [0u32, 2, 1, 1, 0, 2, 2];
    for rng in [None, Some((9, stream(4, 1)))] {
        let mut want = x.clone();
        fake_quant_per_input(&mut want, per, &choice, &[3, 5, 12], rng);
        let xt = up(&ctx, &x, &[n, 3, 10, 10]);
        let ct = words(&ctx, &choice);
        let mut e = ctx.device.create_command_encoder(&Default::default());
        let range = ops::min_max(&ctx, &mut e, &xt).unwrap();
        let y = ops::quantize(&ctx, &mut e, &xt, &range, Bits::PerInput { choice: &ct, opts: &[3, 5, 12] }, rng);
        let y = y.unwrap();
        ctx.queue.submit([e.finish()]);
        close(&read(&ctx, &y), &want, 4.0 * f32::EPSILON, "per-input fake quantization");
    }
    let xt = up(&ctx, &x, &[n, per]);
    let mut e = ctx.device.create_command_encoder(&Default::default());
    let range = ops::min_max(&ctx, &mut e, &xt).unwrap();
    let short = words(&ctx, &choice[..3]);
    let err = ops::quantize(&ctx, &mut e, &xt, &range, Bits::PerInput { choice: &short, opts: &[4] }, None);
    assert!(err.unwrap_err().to_string().contains("3 choices"));
    let ct = words(&ctx, &choice);
    let err = ops::quantize(&ctx, &mut e, &xt, &range, Bits::PerInput { choice: &ct, opts: &[4, 1] }, None);
    assert!(err.unwrap_err().to_string().contains("2..=16"));
}

#[test]
fn gate_forward_matches_reference_in_training_and_evaluation() {
    let Some(ctx) = common::gpu() else { return };
    let d = plan();
    let s = GateShape { n: 37, c: 20, hw: 49, k: 3 };
    let x = rand(s.n * s.c * s.hw, 11);
    let (w, b) = (rand(s.k * s.c, 12), rand(s.k, 13));
    for noise in [Some((3u32, stream(2, 0x8000_0001))), None] {
        let want = gate::forward(&x, s, &w, &b, d.tau, noise);
        let (xt, wt, bt) = (up(&ctx, &x, &[s.n, s.c, 7, 7]), up(&ctx, &w, &[s.k, s.c]), up(&ctx, &b, &[s.k]));
        let counts = words(&ctx, &[0, 0, 0]);
        let mut e = ctx.device.create_command_encoder(&Default::default());
        let st = ops::gate_forward(&ctx, &mut e, &xt, &wt, &bt, &counts, &d, noise).unwrap();
        ctx.queue.submit([e.finish()]);
        close(&read(&ctx, &st.means), &want.means, 1e-5, "channel means");
        close(&read(&ctx, &st.probs), &want.probs, 1e-4, "option probabilities");
        let choice = unwords(&read(&ctx, &st.choice));
        assert_eq!(choice, want.choice, "noise {noise:?}");
        let hist: Vec<u32> = (0..3).map(|k| choice.iter().filter(|&&c| c == k).count() as u32).collect();
        let expect = if noise.is_some() { hist } else { vec![0, 0, 0] };
        assert_eq!(unwords(&read(&ctx, &counts)), expect, "training counts its choices, evaluation nothing");
    }
    let mut e = ctx.device.create_command_encoder(&Default::default());
    let (xt, bad) = (up(&ctx, &x, &[s.n, s.c, 49]), up(&ctx, &w, &[s.c, s.k]));
    let counts = words(&ctx, &[0, 0, 0]);
    let bt = up(&ctx, &b, &[s.k]);
    let err = ops::gate_forward(&ctx, &mut e, &xt, &bad, &bt, &counts, &d, None).unwrap_err().to_string();
    assert!(err.contains("gate weight"), "{err}");
}

#[test]
fn gate_backward_matches_reference() {
    let Some(ctx) = common::gpu() else { return };
    let d = plan();
    let s = GateShape { n: 19, c: 6, hw: 100, k: 3 };
    let x: Vec<f32> = rand(s.n * s.c * s.hw, 21).iter().map(|v| v.abs() * 1.5).collect();
    let dx: Vec<f32> = rand(x.len(), 22).iter().map(|v| v * 0.01).collect();
    let (w, b) = (rand(s.k * s.c, 23), rand(s.k, 24));
    let noise = Some((5u32, 77u32));
    let fwd = gate::forward(&x, s, &w, &b, d.tau, noise);
    let cost = GateCost { fw: &d.fw, costs: &d.costs, target: d.target, alpha: d.alpha, tau: d.tau };
    let dlogit = gate::backward(&x, &dx, min_max(&x), &fwd.probs, s.n, &cost);
    let (want_w, want_b) = gate::weight_grads(&dlogit, &fwd.means, s.n, s.c, s.k);
    let shape = [s.n, s.c, 10, 10];
    let (xt, dxt, wt, bt) = (up(&ctx, &x, &shape), up(&ctx, &dx, &shape), up(&ctx, &w, &[3, 6]), up(&ctx, &b, &[3]));
    let (wg, bg) = (up(&ctx, &[0.0; 18], &[3, 6]), up(&ctx, &[0.0; 3], &[3]));
    let counts = words(&ctx, &[0, 0, 0]);
    let mut e = ctx.device.create_command_encoder(&Default::default());
    let st = ops::gate_forward(&ctx, &mut e, &xt, &wt, &bt, &counts, &d, noise).unwrap();
    let range = ops::min_max(&ctx, &mut e, &xt).unwrap();
    ops::gate_backward(&ctx, &mut e, &xt, &dxt, &range, &st, &d, &wg, &bg).unwrap();
    ctx.queue.submit([e.finish()]);
    let scale = want_w.iter().chain(&want_b).fold(0f32, |a, v| a.max(v.abs()));
    assert!(scale > 1e-4, "the test's gradients are not all tiny ({scale})");
    let rel = |v: &[f32]| v.iter().map(|g| g / scale).collect::<Vec<_>>();
    close(&rel(&read(&ctx, &wg)), &rel(&want_w), 1e-3, "gate weight gradient");
    close(&rel(&read(&ctx, &bg)), &rel(&want_b), 1e-3, "gate bias gradient");
}
