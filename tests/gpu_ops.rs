//! The engine's ops (ReLU, add, pools, batch norm, cross-entropy, optimizers) on the GPU against
//! the reference (`fdsr::reference::nn`, `nn_train`) on random inputs, the reference backward
//! passes against finite differences, and shape errors.

mod common;

use common::{close, rand, read, up};

use fdsr::data::synthetic::SplitMix64;
use fdsr::engine::ops::{self, AdamParams, BnParams, SgdParams};
use fdsr::engine::Tensor;
use fdsr::gpu::Category;
use fdsr::gpu::{ContextOptions, GPU_TARGET_GROUPS};
use fdsr::reference::{nn as r, nn_train as rt};
use fdsr::GpuContext;

/// Elementwise tolerance, relative to `1 + |reference|`.
const TOL: f32 = 1e-5;
/// Tolerance of batch norm (two f32 reductions against f64).
const BN_TOL: f32 = 1e-4;

fn read_words(ctx: &GpuContext, t: &Tensor) -> Vec<u32> {
    read(ctx, t).iter().map(|v| v.to_bits()).collect()
}

fn enc(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device.create_command_encoder(&Default::default())
}

#[test]
fn relu_and_add_match_reference() {
    let Some(ctx) = common::gpu() else { return };
    for (k, n) in [1usize, 31, 32, 33, 1000, 70001].into_iter().enumerate() {
        let mut x = rand(n, k as u64);
        x[0] = 0.0; // zero is not positive
        let (b, dy) = (rand(n, 100 + k as u64), rand(n, 200 + k as u64));
        let (xt, bt, dyt) = (up(&ctx, &x, &[n]), up(&ctx, &b, &[n]), up(&ctx, &dy, &[n]));
        let acc = up(&ctx, &b, &[n]);
        let mut e = enc(&ctx);
        let (y, mask) = ops::relu_forward(&ctx, &mut e, &xt).unwrap();
        let dx = ops::relu_backward(&ctx, &mut e, dyt.clone(), &mask).unwrap();
        let own = ops::positive_mask(&ctx, &mut e, &xt).unwrap();
        let clamped = ops::mask_clamp(&ctx, &mut e, dyt.clone(), &mask).unwrap();
        // Unique inputs are overwritten in place: the same tensor comes back, with the same values.
        let (dy1, dy2) = (up(&ctx, &dy, &[n]), up(&ctx, &dy, &[n]));
        let (id1, id2) = (dy1.id(), dy2.id());
        let dx_in_place = ops::relu_backward(&ctx, &mut e, dy1, &mask).unwrap();
        let clamped_in_place = ops::mask_clamp(&ctx, &mut e, dy2, &mask).unwrap();
        assert_eq!((dx_in_place.id(), clamped_in_place.id()), (id1, id2), "in place n={n}");
        assert_ne!(dx.id(), dyt.id(), "a shared input is not overwritten");
        let s = ops::add(&ctx, &mut e, &xt, &bt).unwrap();
        let (sr, smask) = ops::add_relu(&ctx, &mut e, &xt, &bt).unwrap();
        ops::add_into(&ctx, &mut e, &acc, &dyt).unwrap();
        ctx.queue.submit([e.finish()]);
        let (ry, rw) = r::relu_forward(&x);
        assert_eq!(read_words(&ctx, &mask.words), rw, "mask n={n}");
        assert_eq!(read(&ctx, &y), ry, "relu n={n}");
        assert_eq!(read(&ctx, &dx), r::relu_backward(&dy, &rw), "relu backward n={n}");
        assert_eq!(read_words(&ctx, &own.words), rw, "positive mask n={n}");
        let want = r::mask_clamp(&dy, &rw);
        assert!(want.iter().zip(&dy).any(|(w, d)| *w == 0.0 && *d != 0.0) || n < 32, "the mask must zero some");
        assert_eq!(read(&ctx, &clamped), want, "mask clamp n={n}");
        assert_eq!(read(&ctx, &dx_in_place), r::relu_backward(&dy, &rw), "relu backward in place n={n}");
        assert_eq!(read(&ctx, &clamped_in_place), want, "mask clamp in place n={n}");
        let sum: Vec<f32> = x.iter().zip(&b).map(|(a, b)| a + b).collect();
        assert_eq!(read(&ctx, &s), sum, "add n={n}");
        let (rsr, rsw) = r::relu_forward(&sum);
        assert_eq!(read(&ctx, &sr), rsr, "add_relu n={n}");
        assert_eq!(read_words(&ctx, &smask.words), rsw, "add_relu mask n={n}");
        let acc_want: Vec<f32> = b.iter().zip(&dy).map(|(a, b)| a + b).collect();
        assert_eq!(read(&ctx, &acc), acc_want, "add_into n={n}");
    }
}

#[test]
fn pools_match_reference_with_ties() {
    let Some(ctx) = common::gpu() else { return };
    for (k, s) in [[1, 1, 2, 2], [2, 3, 6, 4], [3, 5, 10, 14], [4, 8, 32, 32]].into_iter().enumerate() {
        let n: usize = s.iter().product();
        // Values on a coarse grid so that windows hold ties.
        let x: Vec<f32> = rand(n, 10 + k as u64).iter().map(|v| (v * 3.0).round()).collect();
        let dy = rand(n / 4, 20 + k as u64);
        let dya = rand(s[0] * s[1], 30 + k as u64);
        let (xt, dyt, dyat) =
            (up(&ctx, &x, &s), up(&ctx, &dy, &[s[0], s[1], s[2] / 2, s[3] / 2]), up(&ctx, &dya, &[s[0], s[1]]));
        let mut e = enc(&ctx);
        let (y, idx) = ops::maxpool2_forward(&ctx, &mut e, &xt).unwrap();
        let dx = ops::maxpool2_backward(&ctx, &mut e, &dyt, &idx, &s).unwrap();
        let again = ops::maxpool2_gather(&ctx, &mut e, &xt, &idx).unwrap();
        let other: Vec<f32> = rand(n, 40 + k as u64);
        let gathered = ops::maxpool2_gather(&ctx, &mut e, &up(&ctx, &other, &s), &idx).unwrap();
        let a = ops::avgpool_forward(&ctx, &mut e, &xt).unwrap();
        let da = ops::avgpool_backward(&ctx, &mut e, &dyat, &s).unwrap();
        ctx.queue.submit([e.finish()]);
        let (ry, rw) = r::maxpool2_forward(&x, s);
        assert_eq!(read_words(&ctx, &idx.words), rw, "pool indices {s:?}");
        assert_eq!(read(&ctx, &y), ry, "max-pool {s:?}");
        assert_eq!(read(&ctx, &dx), r::maxpool2_backward(&dy, &rw, s), "max-pool backward {s:?}");
        assert_eq!(read_words(&ctx, &again), read_words(&ctx, &y), "max-pool gathered from its input {s:?}");
        assert_eq!(read(&ctx, &gathered), r::maxpool2_gather(&other, &rw, s), "max-pool gather {s:?}");
        close(&read(&ctx, &a), &r::avgpool_forward(&x, s), TOL, "avg pool");
        close(&read(&ctx, &da), &r::avgpool_backward(&dya, s), TOL, "avg pool backward");
    }
}

/// Contexts with subgroup reductions (where the adapter offers them) and forced onto the
/// workgroup-memory reductions, each with the adapter's own plans and a large GPU's (reductions
/// split into chunks whatever the adapter).
fn both_reduction_paths() -> Vec<GpuContext> {
    let Some(ctx) = common::gpu() else { return Vec::new() };
    let offered = ctx.adapter_features.contains(wgpu::Features::SUBGROUP);
    assert_eq!(ctx.has_subgroups(), offered, "SUBGROUP requested when offered");
    let mut out = vec![ctx];
    for (no_subgroups, target_groups) in
        [(true, None), (false, Some(GPU_TARGET_GROUPS)), (true, Some(GPU_TARGET_GROUPS))]
    {
        let ctx = common::gpu_with(ContextOptions { no_subgroups, target_groups, ..Default::default() });
        out.push(ctx.expect("another context"));
    }
    assert!(!out[1].has_subgroups() && !out[3].has_subgroups());
    out
}

#[test]
fn batchnorm_matches_reference() {
    // The last two split their reductions into chunks (2049 + 2048 values, then 4 × 2048).
    let shapes = [[2, 3, 5, 7], [8, 4, 9, 9], [1, 2, 1, 3], [3, 17, 16, 16], [1, 3, 17, 241], [8, 4, 32, 32]];
    for ctx in both_reduction_paths() {
        let sg = ctx.has_subgroups();
        for (k, s) in shapes.into_iter().enumerate() {
            for relu in [false, true] {
                let what = format!("{s:?} relu={relu} subgroups={sg} target={}", ctx.target_groups());
                batchnorm_case(&ctx, s, 40 + 10 * k as u64, relu, &what);
            }
        }
    }
}

fn batchnorm_case(ctx: &GpuContext, s: [usize; 4], seed: u64, relu: bool, what: &str) {
    let (n, c) = (s.iter().product::<usize>(), s[1]);
    let x: Vec<f32> = rand(n, seed).iter().map(|v| 2.0 * v + 0.5).collect();
    let dy = rand(n, seed + 1);
    let mut bn = rt::BnRef {
        gamma: rand(c, seed + 2).iter().map(|v| 1.0 + v).collect(),
        beta: rand(c, seed + 3),
        running_mean: rand(c, seed + 4),
        running_var: rand(c, seed + 5).iter().map(|v| 1.5 + v).collect(),
    };
    let ts: Vec<Tensor> =
        [&bn.gamma, &bn.beta, &bn.running_mean, &bn.running_var].iter().map(|v| up(ctx, v, &[c])).collect();
    let p =
        BnParams { gamma: &ts[0], beta: &ts[1], running_mean: &ts[2], running_var: &ts[3], momentum: rt::BN_MOMENTUM };
    let (xt, dyt) = (up(ctx, &x, &s), up(ctx, &dy, &s));
    let (dg, db) = (Tensor::uninit(ctx, &[c], Category::Gradients), Tensor::uninit(ctx, &[c], Category::Gradients));
    let mut e = enc(ctx);
    let (y, saved, mask) = ops::batchnorm_train_forward(ctx, &mut e, &xt, &p, relu).unwrap();
    // dy shared (kept here) gets a new dx; a dy nobody else holds is overwritten with it.
    let dx = ops::batchnorm_backward(ctx, &mut e, (dyt.clone(), &xt), &saved, mask.as_ref(), (&dg, &db)).unwrap();
    let own = up(ctx, &dy, &s);
    let own_id = own.id();
    let dx_in_place = ops::batchnorm_backward(ctx, &mut e, (own, &xt), &saved, mask.as_ref(), (&dg, &db)).unwrap();
    assert!(dx.id() != dyt.id() && dx_in_place.id() == own_id, "{what}: in place only when unshared");
    let ye = ops::batchnorm_eval_forward(ctx, &mut e, &xt, &p, relu).unwrap();
    ctx.queue.submit([e.finish()]);
    let (mut ry, rmean, rinv) = rt::batchnorm_train_forward(&x, s, &mut bn);
    let mut rye = rt::batchnorm_eval_forward(&x, s, &bn);
    let stats = read(ctx, &saved.stats);
    close(&stats[..c], &rmean, BN_TOL, &format!("{what} mean"));
    close(&stats[c..2 * c], &rinv, BN_TOL, &format!("{what} invstd"));
    assert_eq!(stats[2 * c..], bn.gamma, "{what}: the saved gamma");
    close(&read(ctx, &ts[2]), &bn.running_mean, BN_TOL, &format!("{what} running mean"));
    close(&read(ctx, &ts[3]), &bn.running_var, BN_TOL, &format!("{what} running var"));
    let gy = read(ctx, &y);
    let mut rdy = dy.clone();
    if relu {
        let mask = mask.expect("a fused ReLU returns its mask");
        let words = read_words(ctx, &mask.words);
        // The mask marks exactly the positive outputs, and agrees with the reference wherever the
        // reference is not within rounding of zero.
        assert_eq!(words, r::relu_forward(&gy).1, "{what}: mask of the outputs");
        let (_, rw) = r::relu_forward(&ry);
        for (i, v) in ry.iter().enumerate() {
            let (got, want) = ((words[i / 32] >> (i % 32)) & 1, (rw[i / 32] >> (i % 32)) & 1);
            assert!(got == want || v.abs() < 1e-4, "{what}: mask bit {i} ({v})");
        }
        reapply_case(ctx, (&x, &xt, &gy), (&saved, &ts[1]), &mask, (&rmean, &rinv, &bn), what);
        ry = r::relu_forward(&ry).0;
        rye = r::relu_forward(&rye).0;
        rdy = r::relu_backward(&dy, &words);
    } else {
        assert!(mask.is_none());
    }
    close(&gy, &ry, BN_TOL, &format!("{what} y"));
    close(&read(ctx, &ye), &rye, BN_TOL, &format!("{what} eval y"));
    let (rdx, rdg, rdb) = rt::batchnorm_backward(&rdy, &x, s, &rmean, &rinv, &bn.gamma);
    close(&read(ctx, &dx), &rdx, BN_TOL, &format!("{what} dx"));
    assert_eq!(read_words(ctx, &dx_in_place), read_words(ctx, &dx), "{what}: dx in place, bit for bit");
    close(&read(ctx, &dg), &rdg, BN_TOL, &format!("{what} dgamma"));
    close(&read(ctx, &db), &rdb, BN_TOL, &format!("{what} dbeta"));
}

/// The forward's output again from its input `x` (its GPU copy `xt`, output `y`), exact then
/// perturbed (as a decoded input would be), shared and in place, with and without the clamp.
fn reapply_case(
    ctx: &GpuContext,
    (x, xt, y): (&[f32], &Tensor, &[f32]),
    (saved, beta): (&ops::BnSaved, &Tensor),
    mask: &ops::BitMask,
    (mean, invstd, bn): (&[f32], &[f32], &rt::BnRef),
    what: &str,
) {
    let s = xt.shape().to_vec();
    let noisy: Vec<f32> = x.iter().zip(rand(x.len(), 7)).map(|(a, n)| a + 0.3 * n).collect();
    let mut e = enc(ctx);
    let shared = ops::batchnorm_reapply(ctx, &mut e, xt.clone(), (saved, beta), mask, false).unwrap();
    let own = up(ctx, x, &s);
    let own_id = own.id();
    let in_place = ops::batchnorm_reapply(ctx, &mut e, own, (saved, beta), mask, false).unwrap();
    assert!(shared.id() != xt.id() && in_place.id() == own_id, "{what}: re-apply in place only when unshared");
    let lossy: Vec<Tensor> = [false, true]
        .map(|clamp| ops::batchnorm_reapply(ctx, &mut e, up(ctx, &noisy, &s), (saved, beta), mask, clamp).unwrap())
        .into();
    ctx.queue.submit([e.finish()]);
    let bits: Vec<u32> = y.iter().map(|v| v.to_bits()).collect();
    assert_eq!(read_words(ctx, &shared), bits, "{what}: re-applied from the exact input, bit for bit");
    assert_eq!(read_words(ctx, &in_place), bits, "{what}: re-applied in place, bit for bit");
    let words = read_words(ctx, &mask.words);
    let hw = s[2] * s[3];
    let affine: Vec<f32> = noisy
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let c = (i / hw) % s[1];
            bn.gamma[c] * ((v - mean[c]) * invstd[c]) + bn.beta[c]
        })
        .collect();
    let clamped: Vec<f32> = affine.iter().map(|v| v.max(0.0)).collect();
    for (t, want, label) in [(&lossy[0], &affine, "unbiased"), (&lossy[1], &clamped, "clamped")] {
        close(&read(ctx, t), &r::relu_backward(want, &words), BN_TOL, &format!("{what} re-apply {label}"));
    }
}

#[test]
fn cross_entropy_matches_reference() {
    for ctx in both_reduction_paths() {
        cross_entropy_case(&ctx);
    }
}

fn cross_entropy_case(ctx: &GpuContext) {
    let acc = Tensor::from_slice(ctx, &[0.0, 0.0], &[2], Category::Workspace).unwrap();
    let (mut sum_loss, mut sum_hits) = (0f64, 0f64);
    for (k, (b, c)) in [(1usize, 3usize), (7, 10), (300, 10), (64, 100)].into_iter().enumerate() {
        let logits: Vec<f32> = rand(b * c, 60 + k as u64).iter().map(|v| 4.0 * v).collect();
        let mut g = SplitMix64::new(70 + k as u64);
        let labels: Vec<u8> = (0..b).map(|_| g.below(c) as u8).collect();
        let (lt, lab) = (up(ctx, &logits, &[b, c]), ops::upload_labels(ctx, &labels));
        let mut e = enc(ctx);
        let out = ops::cross_entropy_forward(ctx, &mut e, &lt, &lab).unwrap();
        let dx = ops::cross_entropy_backward(ctx, &mut e, &out.probs, &lab).unwrap();
        ops::accumulate_metrics(ctx, &mut e, &out, &acc).unwrap();
        ctx.queue.submit([e.finish()]);
        let (loss, correct, probs) = r::cross_entropy_forward(&logits, &labels, c);
        close(&read(ctx, &out.loss), &[loss as f32], TOL, "loss");
        assert_eq!(read(ctx, &out.correct), [correct as f32], "correct");
        close(&read(ctx, &out.probs), &probs, TOL, "probs");
        close(&read(ctx, &dx), &r::cross_entropy_backward(&probs, &labels, c), TOL, "ce grad");
        sum_loss += f64::from(read(ctx, &out.loss)[0]);
        sum_hits += correct as f64;
    }
    close(&read(ctx, &acc), &[sum_loss as f32, sum_hits as f32], TOL, "metrics accumulator");
}

#[test]
fn gradient_error_sums_match_the_host() {
    for ctx in both_reduction_paths() {
        let mut e = enc(&ctx);
        let sizes = [1usize, 300, 4096, 4097, 20_000];
        let total: usize = sizes.iter().map(|&n| ops::compare::partials(n)).sum();
        let out = Tensor::uninit(&ctx, &[2 * total], Category::Workspace);
        let (mut first, mut want) = (0, Vec::new());
        for (k, n) in sizes.into_iter().enumerate() {
            let exact = rand(n, 90 + k as u64);
            let noisy: Vec<f32> = exact.iter().zip(rand(n, 95 + k as u64)).map(|(x, r)| x + 0.1 * r).collect();
            let (et, ct) = (up(&ctx, &exact, &[n]), up(&ctx, &noisy, &[n]));
            ops::compare::diff_sums(&ctx, &mut e, &et, &ct, &out, first).unwrap();
            first += ops::compare::partials(n);
            let diff2: f64 = exact.iter().zip(&noisy).map(|(x, y)| f64::from(y - x).powi(2)).sum();
            let norm2: f64 = exact.iter().map(|x| f64::from(*x).powi(2)).sum();
            want.push((ops::compare::partials(n), diff2, norm2));
        }
        ctx.queue.submit([e.finish()]);
        let words = read(&ctx, &out);
        let mut pairs = words.chunks_exact(2);
        for (n, diff2, norm2) in want {
            let got = pairs.by_ref().take(n).fold((0f64, 0f64), |a, w| (a.0 + f64::from(w[0]), a.1 + f64::from(w[1])));
            assert!((got.0 - diff2).abs() <= 1e-5 * diff2, "diff² {got:?} vs {diff2}");
            assert!((got.1 - norm2).abs() <= 1e-5 * norm2, "norm² {got:?} vs {norm2}");
        }
        let short = up(&ctx, &[1.0; 3], &[3]);
        let err = ops::compare::diff_sums(&ctx, &mut enc(&ctx), &short, &short, &up(&ctx, &[0.0], &[1]), 0);
        assert!(err.is_err(), "sums past the end of the output are refused");
    }
}

#[test]
fn optimizers_match_reference_over_three_steps() {
    let Some(ctx) = common::gpu() else { return };
    let n = 1000;
    let sgds = [
        SgdParams { lr: 0.1, momentum: 0.0, weight_decay: 0.0, nesterov: false },
        SgdParams { lr: 0.05, momentum: 0.9, weight_decay: 5e-4, nesterov: false },
        SgdParams { lr: 0.05, momentum: 0.9, weight_decay: 1e-2, nesterov: true },
    ];
    for (k, h) in sgds.into_iter().enumerate() {
        let (mut w, mut buf) = (rand(n, 80 + k as u64), vec![0f32; n]);
        let (wt, bt) = (up(&ctx, &w, &[n]), up(&ctx, &buf, &[n]));
        for step in 0..3u64 {
            let g = rand(n, 90 + 10 * k as u64 + step);
            let gt = up(&ctx, &g, &[n]);
            let mut e = enc(&ctx);
            ops::sgd_step(&ctx, &mut e, &wt, &gt, (h.momentum != 0.0).then_some(&bt), h).unwrap();
            ctx.queue.submit([e.finish()]);
            rt::sgd_step(&mut w, &g, &mut buf, h);
        }
        close(&read(&ctx, &wt), &w, TOL, &format!("sgd {h:?}"));
    }
    let (mut w, mut m, mut v) = (rand(n, 7), vec![0f32; n], vec![0f32; n]);
    let (wt, mt, vt) = (up(&ctx, &w, &[n]), up(&ctx, &m, &[n]), up(&ctx, &v, &[n]));
    for step in 1..=3u32 {
        let h = AdamParams { lr: 1e-2, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 1e-2, step };
        let g = rand(n, 100 + u64::from(step));
        let gt = up(&ctx, &g, &[n]);
        let mut e = enc(&ctx);
        ops::adamw_step(&ctx, &mut e, &wt, &gt, &mt, &vt, h).unwrap();
        ctx.queue.submit([e.finish()]);
        rt::adamw_step(&mut w, &g, &mut m, &mut v, h);
    }
    close(&read(&ctx, &wt), &w, TOL, "adamw param");
    close(&read(&ctx, &mt), &m, TOL, "adamw m");
    close(&read(&ctx, &vt), &v, TOL, "adamw v");
}

#[test]
fn shape_errors_are_reported() {
    let Some(ctx) = common::gpu() else { return };
    let x = up(&ctx, &rand(2 * 3 * 5 * 4, 1), &[2, 3, 5, 4]);
    let y = up(&ctx, &rand(6, 2), &[6]);
    let mut e = enc(&ctx);
    let err = ops::maxpool2_forward(&ctx, &mut e, &x).unwrap_err();
    assert!(err.to_string().contains("[2, 3, 5, 4]"), "{err}");
    assert!(ops::add(&ctx, &mut e, &x, &y).is_err());
    assert!(ops::add_into(&ctx, &mut e, &y, &y).is_err());
    assert!(ops::avgpool_forward(&ctx, &mut e, &y).is_err());
    let (_, mask) = ops::relu_forward(&ctx, &mut e, &y).unwrap();
    assert!(ops::relu_backward(&ctx, &mut e, x.clone(), &mask).is_err());
    let lab = ops::upload_labels(&ctx, &[0, 7]);
    let logits = up(&ctx, &rand(12, 3), &[2, 6]);
    assert!(ops::cross_entropy_forward(&ctx, &mut e, &logits, &lab).is_err(), "label 7 of 6 classes");
    let c = up(&ctx, &[1.0; 3], &[3]);
    let p = BnParams { gamma: &y, beta: &c, running_mean: &c, running_var: &c, momentum: rt::BN_MOMENTUM };
    assert!(ops::batchnorm_train_forward(&ctx, &mut e, &x, &p, false).is_err(), "gamma [6] for 3 channels");
    let h = SgdParams { lr: 0.1, momentum: 0.9, weight_decay: 0.0, nesterov: false };
    assert!(ops::sgd_step(&ctx, &mut e, &y, &y, None, h).is_err(), "momentum without a buffer");
}

/// More than 65535 workgroups of 256: the kernels linearize the 2-D grid.
#[test]
fn add_covers_a_two_dimensional_grid() {
    let Some(ctx) = common::gpu() else { return };
    let n = 65535 * 256 + 300;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32 - 300.0).collect();
    let (at, bt) = (up(&ctx, &a, &[n]), up(&ctx, &b, &[n]));
    let mut e = enc(&ctx);
    let s = ops::add(&ctx, &mut e, &at, &bt).unwrap();
    ctx.queue.submit([e.finish()]);
    let got = read(&ctx, &s);
    let bad = (0..n).find(|&i| got[i] != a[i] + b[i]);
    assert_eq!(bad, None, "first wrong sum");
}
