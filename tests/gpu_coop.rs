//! The cooperative-matrix GEMM path: where the adapter has no cooperative matrices (CI's Mesa 22.3
//! lavapipe), `--compute auto` resolves to fp32 and trains bit for bit like `fp32`; where it has
//! them (Mesa 26.2's lavapipe, 8×8×8: `scripts/coop-lavapipe.sh`), the coop kernel matches
//! `fdsr::reference` products of every kind (splits of K and gradient-sized operands included)
//! within the f16 tolerance, really is not the fp32 kernel, and trains close to fp32.

mod common;

use common::{rand, read, up};
use fdsr::data::synthetic;
use fdsr::engine::batch::{epoch_order, make_batch, Normalization};
use fdsr::engine::gemm::{self, rel_error, select_compute, ConvGeom, GemmPlan, SELF_CHECK_TOLERANCE};
use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{ModelName, Tensor, TrainConfig, Trainer};
use fdsr::gpu::{Category, Compute, ComputePath, ContextOptions, GPU_TARGET_GROUPS};
use fdsr::reference::conv as r;
use fdsr::GpuContext;

fn config(compute: Compute) -> TrainConfig {
    TrainConfig {
        model: ModelName::Tiny,
        epochs: 1,
        batch: 8,
        lr: 0.05,
        schedule: Schedule::Constant,
        opt: OptConfig::defaults(OptKind::Sgd),
        seed: 5,
        augment: false,
        policy: None,
        compute,
    }
}

/// All parameter values after `steps` steps of `cfg` on synthetic images.
fn train(ctx: &GpuContext, cfg: TrainConfig, steps: usize) -> Vec<f32> {
    let data = synthetic::images(cfg.batch, 28, 28, 10, 3);
    let norm = Normalization::of(&data);
    let mut t = Trainer::new(ctx, cfg.clone()).unwrap();
    let order = epoch_order(data.len(), cfg.seed, 0);
    for s in 0..steps {
        let idx: Vec<usize> = (0..cfg.batch).map(|i| order[(s * cfg.batch + i) % data.len()]).collect();
        let (x, y) = make_batch(&data, &idx, norm, None).unwrap();
        pollster::block_on(t.step(ctx, &x, &y, cfg.lr)).unwrap();
    }
    let mut params = Vec::new();
    t.model.visit(&mut |p| params.extend(pollster::block_on(p.value.to_vec(ctx)).unwrap()));
    params
}

#[test]
fn auto_without_cooperative_matrices_is_the_fp32_path_bit_for_bit() {
    let Some(ctx) = common::gpu() else { return };
    if let Ok(path) = ctx.coop_path() {
        eprintln!("skipping: {} has cooperative matrices ({path:?}); see the kernel test", ctx.adapter_description());
        return;
    }
    let report = pollster::block_on(select_compute(&ctx, Compute::Auto)).unwrap();
    assert_eq!(report.path, ComputePath::Fp32, "{report}");
    assert!(!report.self_check_failed, "no self-check runs without cooperative matrices: {report}");
    assert!(report.to_string().starts_with("compute: fp32 (no cooperative matrices: "), "{report}");
    // Asked for by name, they are an error that says why.
    let e = pollster::block_on(select_compute(&ctx, Compute::Coop)).unwrap_err().to_string();
    assert!(e.contains("--compute coop on ") && e.contains("no cooperative matrices"), "{e}");
    // A device without the feature refuses the coop path with an error naming why.
    let e = ctx.set_compute_path(ComputePath::Coop { fragment: 16, rounds: 1 }).unwrap_err().to_string();
    assert!(e.contains("cooperative matrices cannot run"), "{e}");
    assert_eq!(ctx.compute_path(), ComputePath::Fp32);
    let auto = train(&ctx, config(Compute::Auto), 3);
    let fp32 = train(&ctx, config(Compute::Fp32), 3);
    assert_eq!(auto.len(), fp32.len());
    assert!(auto.iter().zip(&fp32).all(|(a, b)| a.to_bits() == b.to_bits()), "auto differs from fp32");
    // Not vacuous: the steps moved the weights away from their initialization.
    assert_ne!(train(&ctx, config(Compute::Fp32), 0), fp32);
}

#[test]
fn coop_trains_close_to_fp32() {
    let Some(ctx) = common::gpu() else { return };
    let Ok(path) = ctx.coop_path() else {
        eprintln!("skipping: {} has no cooperative matrices; see the fp32 test", ctx.adapter_description());
        return;
    };
    let report = pollster::block_on(select_compute(&ctx, Compute::Coop)).unwrap();
    assert_eq!(report.path, path, "{report}");
    let (start, steps) = (train(&ctx, config(Compute::Fp32), 0), 5);
    ctx.set_compute_path(path).unwrap();
    let coop = train(&ctx, config(Compute::Coop), steps);
    assert_eq!(ctx.compute_path(), path, "the trainer kept the chosen path");
    let fp32 = train(&ctx, config(Compute::Fp32), steps);
    assert!(coop.iter().all(|v| v.is_finite()));
    assert!(coop.iter().zip(&fp32).any(|(a, b)| a.to_bits() != b.to_bits()), "coop trained fp32's bits");
    // The f16 operands move the weights as fp32 does: the two runs' updates differ by a small
    // fraction of the update itself.
    let update: Vec<f32> = fp32.iter().zip(&start).map(|(a, b)| a - b).collect();
    let coop_update: Vec<f32> = coop.iter().zip(&start).map(|(a, b)| a - b).collect();
    let e = rel_error(&coop_update, &update);
    eprintln!("{path}: the update after {steps} steps is {e:.1e} (relative) away from fp32's");
    assert!(e < 0.05, "coop's update is {e:.3} away from fp32's (relative)");
}

#[test]
fn fp32_forces_fp32_and_skips_the_experimental_feature() {
    let opts = ContextOptions { no_cooperative_matrix: true, ..Default::default() };
    let Some(ctx) = common::gpu_with(opts) else { return };
    assert!(!ctx.device.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX));
    assert!(ctx.coop_path().is_err(), "the feature was not requested, so the path cannot run");
    let report = pollster::block_on(select_compute(&ctx, Compute::Fp32)).unwrap();
    assert_eq!((report.path, report.to_string().as_str()), (ComputePath::Fp32, "compute: fp32 (--compute fp32)"));
}

const GEOMS: [ConvGeom; 4] = [
    ConvGeom { batch: 2, cin: 3, h: 9, w: 7, cout: 5, ksize: 3, stride: 1, pad: 1 },
    ConvGeom { batch: 3, cin: 4, h: 10, w: 10, cout: 70, ksize: 3, stride: 2, pad: 1 },
    ConvGeom { batch: 2, cin: 17, h: 5, w: 6, cout: 9, ksize: 3, stride: 1, pad: 0 },
    // The weight gradient splits K on a GPU's plan.
    ConvGeom { batch: 4, cin: 3, h: 32, w: 32, cout: 16, ksize: 3, stride: 1, pad: 1 },
];

/// Runs `f` (one product) on the coop path and on fp32; returns both results. The coop path
/// records one dispatch more than fp32's: the abs-max of both operands.
fn both(ctx: &GpuContext, path: ComputePath, f: &dyn Fn(&mut wgpu::CommandEncoder) -> Tensor) -> (Vec<f32>, Vec<f32>) {
    let (mut out, mut dispatches) = (Vec::new(), Vec::new());
    for p in [path, ComputePath::Fp32] {
        ctx.set_compute_path(p).unwrap();
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let before = ctx.transfer_counts();
        let t = f(&mut enc);
        dispatches.push(ctx.transfer_counts().since(&before).dispatches);
        ctx.queue.submit([enc.finish()]);
        out.push(read(ctx, &t));
    }
    assert_eq!(dispatches[0], dispatches[1] + 1, "coop against fp32 dispatches");
    let fp32 = out.pop().unwrap();
    (out.pop().unwrap(), fp32)
}

/// The coop result is within the f16 tolerance of the reference and differs from the fp32
/// kernel's somewhere (f16 rounding shows: the coop kernel really ran).
fn check(what: &str, (coop, fp32): (Vec<f32>, Vec<f32>), want: &[f32]) {
    let e = rel_error(&coop, want);
    assert!(e <= SELF_CHECK_TOLERANCE, "{what}: relative error {e:.2e}");
    assert!(rel_error(&fp32, want) < 1e-5, "{what}: the fp32 kernel is off");
    assert!(coop.iter().zip(&fp32).any(|(a, b)| a.to_bits() != b.to_bits()), "{what}: coop gave fp32's bits");
}

#[test]
fn coop_kernel_matches_the_reference_where_offered() {
    let opts = ContextOptions { target_groups: Some(GPU_TARGET_GROUPS), ..Default::default() };
    let Some(ctx) = common::gpu_with(opts) else { return };
    let path = match ctx.coop_path() {
        Ok(path) => path,
        Err(why) => {
            let what = format!("no cooperative-matrix path on {}: {why}", ctx.adapter_description());
            // scripts/coop-lavapipe.sh sets REQUIRE_COOP=1: an adapter that should have them.
            assert!(!std::env::var("REQUIRE_COOP").is_ok_and(|v| v == "1"), "REQUIRE_COOP=1 but {what}");
            eprintln!("skipping: {what}");
            return;
        }
    };
    let report = pollster::block_on(select_compute(&ctx, Compute::Coop)).unwrap();
    assert_eq!(report.path, path, "{report}");
    // `auto` also times a layer on both paths and takes the faster (lavapipe emulates
    // cooperative matrices, slower than its fp32 kernel).
    let auto = pollster::block_on(select_compute(&ctx, Compute::Auto)).unwrap();
    eprintln!("{auto}");
    assert!(!auto.self_check_failed && auto.path == ctx.compute_path(), "{auto}");
    assert!(auto.to_string().contains("against fp32's"), "{auto}");
    assert!(auto.path == path || auto.to_string().contains("slower"), "{auto}");
    let mut split = false;
    for (i, g) in GEOMS.iter().enumerate() {
        let seed = 100 + i as u64 * 10;
        let xs = [g.batch, g.cin, g.h, g.w];
        let x = rand(xs.iter().product(), seed);
        let w = rand(g.weight_shape().iter().product(), seed + 1);
        let bias = rand(g.cout, seed + 2);
        // Gradient-sized output gradients.
        let dy: Vec<f32> = rand(g.out_shape().iter().product(), seed + 3).iter().map(|v| v * 1e-6).collect();
        let (xt, wt, bt, dyt) = (
            up(&ctx, &x, &xs),
            up(&ctx, &w, &g.weight_shape()),
            up(&ctx, &bias, &[g.cout]),
            up(&ctx, &dy, &g.out_shape()),
        );
        let y = both(&ctx, path, &|enc| gemm::conv2d_forward(&ctx, enc, &xt, &wt, Some(&bt), g.stride, g.pad).unwrap());
        check(&format!("{g:?} y"), y, &r::conv2d_forward(g, &x, &w, Some(&bias)));
        let dx = both(&ctx, path, &|enc| gemm::conv2d_backward_data(&ctx, enc, g, &dyt, &wt).unwrap());
        check(&format!("{g:?} dx"), dx, &r::conv2d_backward_data(g, &dy, &w));
        let dw = both(&ctx, path, &|enc| {
            let dw = Tensor::uninit(&ctx, &g.weight_shape(), Category::Gradients);
            gemm::conv2d_backward_weight(&ctx, enc, g, &dyt, &xt, &dw).unwrap();
            dw
        });
        check(&format!("{g:?} dw"), dw, &r::conv2d_backward_weight(g, &dy, &x));
        let (m, n, k) = (g.cout, g.cin * g.ksize * g.ksize, g.batch * g.oh() * g.ow());
        split |= GemmPlan::choose(m, n, k, ctx.target_groups(), ctx.max_binding_bytes()).splits > 1;
    }
    assert!(split, "no weight gradient split K");
    let (rows, inner, cols) = (33, 70, 19);
    let (x, w, bias) = (rand(rows * inner, 1), rand(cols * inner, 2), rand(cols, 3));
    let dy: Vec<f32> = rand(rows * cols, 4).iter().map(|v| v * 1e-6).collect();
    let (xt, wt, bt, dyt) = (
        up(&ctx, &x, &[rows, inner]),
        up(&ctx, &w, &[cols, inner]),
        up(&ctx, &bias, &[cols]),
        up(&ctx, &dy, &[rows, cols]),
    );
    let y = both(&ctx, path, &|enc| gemm::linear_forward(&ctx, enc, &xt, &wt, Some(&bt)).unwrap());
    check("linear y", y, &r::linear_forward(&x, &w, Some(&bias), rows, inner, cols));
    let (rdx, rdw, _) = r::linear_backward(&dy, &x, &w, rows, inner, cols);
    let dx = both(&ctx, path, &|enc| gemm::linear_backward_data(&ctx, enc, &dyt, &wt).unwrap());
    check("linear dx", dx, &rdx);
    let dw = both(&ctx, path, &|enc| {
        let dw = Tensor::uninit(&ctx, &[cols, inner], Category::Gradients);
        gemm::linear_backward_weight(&ctx, enc, &dyt, &xt, &dw).unwrap();
        dw
    });
    check("linear dw", dw, &rdw);
}

/// The abs-max behind the coop kernel's scales (it runs anywhere): in one dispatch, the bits of
/// max |a| and max |b| over the first `len` values of each only, over many workgroups,
/// accumulated into slots 0 and 1 of a cleared buffer.
#[test]
fn absmax_finds_the_largest_magnitude_of_each_operand() {
    let Some(ctx) = common::gpu() else { return };
    let n = 300_000; // more than one workgroup's share (2048 values)
    let mut x: Vec<f32> = rand(n, 9).iter().map(|v| v * 1e-6).collect();
    x[123_457] = -3.5e-6; // the largest magnitude is negative
    x[n - 1] = 1.0; // past `len`: not counted
    let small: Vec<f32> = vec![0.25, -0.5, 0.125, 9.0]; // one workgroup; the 9 is past its `len`
    let (xt, st) = (up(&ctx, &x, &[n]), up(&ctx, &small, &[4]));
    for (swap, slots) in [(false, [0, 1]), (true, [1, 0])] {
        let scales = up(&ctx, &[7.0, 7.0], &[2]);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        enc.clear_buffer(scales.buffer(), 0, None);
        let (big, little) = ((xt.buffer() as &dyn fdsr::gpu::kernel::Bindable, n - 1), (st.buffer() as _, 3));
        let ops = if swap { [little, big] } else { [big, little] };
        gemm::record_absmax(&ctx, &mut enc, ops, scales.buffer()).unwrap();
        ctx.queue.submit([enc.finish()]);
        let got = read(&ctx, &scales);
        let want = x[..n - 1].iter().fold(0f32, |m, v| m.max(v.abs()));
        assert_eq!(want, 3.5e-6);
        assert_eq!(got[slots[0]].to_bits(), want.to_bits(), "the long operand, slot {}", slots[0]);
        assert_eq!(got[slots[1]].to_bits(), 0.5f32.to_bits(), "the short operand, slot {}", slots[1]);
    }
    assert!(gemm::scale_groups(n - 1) > 1, "one workgroup only");
}

/// The coop kernel's `scale_exp` and `unscale` (WGSL, shared through `gemm_scale_fns.wgsl`) run
/// through `gemm_scale`'s probe on any adapter and agree with the host's mirrors bit for bit.
#[test]
fn the_kernels_scale_functions_match_the_host() {
    let Some(ctx) = common::gpu() else { return };
    let mut x: Vec<f32> = vec![0.0, 1.0, -1.0, 0.75, 3.5e-6, -1e-6, 65504.0, 1e-30, 3e38, f32::MIN_POSITIVE, 1e-40];
    x.extend(rand(200, 21).iter().map(|v| v * 1e-3));
    for t in [-252i32, -114, -1, 0, 1, 37, 252] {
        let xt = up(&ctx, &x, &[x.len()]);
        let out = up(&ctx, &vec![0.0; 2 * x.len()], &[2 * x.len()]);
        let q = [x.len() as u32, t as u32, 0, 0];
        let qbuf = fdsr::gpu::kernel::uniform(&ctx, "probe", &q);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let groups = (x.len() as u32).div_ceil(64);
        fdsr::gpu::kernel::dispatch(
            &ctx,
            &mut enc,
            "gemm_scale",
            "scale_probe",
            &[&qbuf, xt.buffer(), xt.buffer(), out.buffer()],
            groups,
        )
        .unwrap();
        ctx.queue.submit([enc.finish()]);
        let got = read(&ctx, &out);
        for (i, &v) in x.iter().enumerate() {
            assert_eq!(got[2 * i].to_bits() as i32, gemm::scale_exponent(v.abs()), "scale_exp of {v}");
            let want = gemm::unscale(v, t);
            // A device may flush subnormals to zero, results (want) and operands (v) alike
            // (Mesa 26.2's lavapipe flushes 1e-40).
            let flushed = want.abs() < f32::MIN_POSITIVE || v.abs() < f32::MIN_POSITIVE;
            let ok =
                got[2 * i + 1].to_bits() == want.to_bits() || (flushed && got[2 * i + 1].abs() < f32::MIN_POSITIVE);
            assert!(ok, "unscale({v}, {t}): {} vs {want}", got[2 * i + 1]);
        }
    }
}
