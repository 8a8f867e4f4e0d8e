//! conv2d and linear on the GPU against the reference (`fdsr::reference::conv`) on random inputs,
//! and the reference's gradients against finite differences.

mod common;

use common::{close, rand, read, up};

use fdsr::engine::gemm::{self, ConvGeom, GemmPlan};
use fdsr::engine::Tensor;
use fdsr::gpu::{Category, ContextOptions, GPU_TARGET_GROUPS};
use fdsr::reference::conv as r;
use fdsr::GpuContext;

const GEOMS: [ConvGeom; 10] = [
    ConvGeom { batch: 2, cin: 3, h: 9, w: 7, cout: 5, ksize: 3, stride: 1, pad: 1 },
    ConvGeom { batch: 3, cin: 4, h: 10, w: 10, cout: 70, ksize: 3, stride: 2, pad: 1 },
    ConvGeom { batch: 2, cin: 6, h: 8, w: 8, cout: 3, ksize: 1, stride: 2, pad: 0 },
    ConvGeom { batch: 1, cin: 1, h: 32, w: 32, cout: 8, ksize: 3, stride: 1, pad: 1 },
    ConvGeom { batch: 5, cin: 2, h: 31, w: 29, cout: 4, ksize: 3, stride: 1, pad: 1 },
    ConvGeom { batch: 2, cin: 17, h: 5, w: 6, cout: 9, ksize: 3, stride: 1, pad: 0 },
    // Long reductions: the weight gradient splits K (16 to 64 rows per tile, uneven last split).
    ConvGeom { batch: 4, cin: 3, h: 32, w: 32, cout: 16, ksize: 3, stride: 1, pad: 1 },
    ConvGeom { batch: 6, cin: 5, h: 15, w: 17, cout: 40, ksize: 3, stride: 2, pad: 1 },
    ConvGeom { batch: 3, cin: 24, h: 16, w: 16, cout: 20, ksize: 1, stride: 1, pad: 0 },
    // A weight gradient longer than llvmpipe lets one invocation loop (K = 40,960, `cnn`'s first
    // layer at batch 40): split on every adapter (`plan::MAX_SPLIT_K`).
    ConvGeom { batch: 40, cin: 1, h: 32, w: 32, cout: 8, ksize: 3, stride: 1, pad: 1 },
];

/// The default context and one laying products out as on a large GPU (splits of K included),
/// whatever the adapter.
fn plans() -> Vec<GpuContext> {
    let Some(ctx) = common::gpu() else { return Vec::new() };
    let opts = ContextOptions { target_groups: Some(GPU_TARGET_GROUPS), ..Default::default() };
    vec![ctx, common::gpu_with(opts).expect("a second context")]
}

#[test]
fn conv2d_matches_reference() {
    for ctx in plans() {
        conv2d_case(&ctx);
    }
}

fn conv2d_case(ctx: &GpuContext) {
    for (i, g) in GEOMS.iter().enumerate() {
        let seed = i as u64 * 10;
        let xs = [g.batch, g.cin, g.h, g.w];
        let x = rand(xs.iter().product(), seed);
        let w = rand(g.weight_shape().iter().product(), seed + 1);
        let bias = rand(g.cout, seed + 2);
        let dy = rand(g.out_shape().iter().product(), seed + 3);
        let (xt, wt, bt, dyt) =
            (up(ctx, &x, &xs), up(ctx, &w, &g.weight_shape()), up(ctx, &bias, &[g.cout]), up(ctx, &dy, &g.out_shape()));
        let dwt = Tensor::uninit(ctx, &g.weight_shape(), Category::Gradients);
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let y = gemm::conv2d_forward(ctx, &mut enc, &xt, &wt, Some(&bt), g.stride, g.pad).unwrap();
        let dx = gemm::conv2d_backward_data(ctx, &mut enc, g, &dyt, &wt).unwrap();
        gemm::conv2d_backward_weight(ctx, &mut enc, g, &dyt, &xt, &dwt).unwrap();
        ctx.queue.submit([enc.finish()]);
        assert_eq!(y.shape(), g.out_shape());
        close(&read(ctx, &y), &r::conv2d_forward(g, &x, &w, Some(&bias)), 1e-4, &format!("{g:?} y"));
        close(&read(ctx, &dx), &r::conv2d_backward_data(g, &dy, &w), 1e-4, &format!("{g:?} dx"));
        close(&read(ctx, &dwt), &r::conv2d_backward_weight(g, &dy, &x), 1e-3, &format!("{g:?} dw"));
    }
}

/// The plans of the test shapes cover every tile height and both one and many splits.
#[test]
fn test_shapes_cover_the_plans() {
    let plans: Vec<GemmPlan> = GEOMS
        .iter()
        .flat_map(|g| {
            let (kk, ohw) = (g.ksize * g.ksize, g.oh() * g.ow());
            [
                GemmPlan::choose(g.cout, g.batch * ohw, g.cin * kk, GPU_TARGET_GROUPS, 128 << 20),
                GemmPlan::choose(g.cin, g.batch * g.h * g.w, g.cout * kk, GPU_TARGET_GROUPS, 128 << 20),
                GemmPlan::choose(g.cout, g.cin * kk, g.batch * ohw, GPU_TARGET_GROUPS, 128 << 20),
            ]
        })
        .collect();
    for tm in [16, 32, 64] {
        assert!(plans.iter().any(|p| p.tm == tm), "no test shape has {tm}-row tiles: {plans:?}");
    }
    assert!(plans.iter().any(|p| p.splits == 1) && plans.iter().any(|p| p.splits > 8 && p.lanes > 1));
}

/// A split weight gradient gives the same bits every time (fixed-order partial sums).
#[test]
fn split_weight_gradient_is_reproducible() {
    let Some(ctx) = plans().pop() else { return };
    let g = GEOMS[6];
    let (x, dy) = (rand(g.batch * g.cin * g.h * g.w, 5), rand(g.out_shape().iter().product(), 6));
    let (xt, dyt) = (up(&ctx, &x, &[g.batch, g.cin, g.h, g.w]), up(&ctx, &dy, &g.out_shape()));
    let runs: Vec<Vec<u32>> = (0..2)
        .map(|_| {
            let dwt = Tensor::uninit(&ctx, &g.weight_shape(), Category::Gradients);
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            gemm::conv2d_backward_weight(&ctx, &mut enc, &g, &dyt, &xt, &dwt).unwrap();
            ctx.queue.submit([enc.finish()]);
            read(&ctx, &dwt).iter().map(|v| v.to_bits()).collect()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn linear_matches_reference_with_split_k() {
    for ctx in plans() {
        linear_case(&ctx);
    }
}

fn linear_case(ctx: &GpuContext) {
    // 4500 rows: the weight and bias gradients split K over the grid (with a GPU's plan).
    for (rows, inner, cols) in [(7, 13, 10), (130, 128, 70), (4500, 5, 3)] {
        let x = rand(rows * inner, rows as u64);
        let w = rand(cols * inner, 1 + rows as u64);
        let b = rand(cols, 2 + rows as u64);
        let dy = rand(rows * cols, 3 + rows as u64);
        let (xt, wt, bt, dyt) = (
            up(ctx, &x, &[rows, inner]),
            up(ctx, &w, &[cols, inner]),
            up(ctx, &b, &[cols]),
            up(ctx, &dy, &[rows, cols]),
        );
        let ones = fdsr::gpu::kernel::storage_init(ctx, "ones", bytemuck::cast_slice(&vec![1.0f32; rows]));
        let (dwt, dbt) = (
            Tensor::uninit(ctx, &[cols, inner], Category::Gradients),
            Tensor::uninit(ctx, &[cols], Category::Gradients),
        );
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let y = gemm::linear_forward(ctx, &mut enc, &xt, &wt, Some(&bt)).unwrap();
        let dx = gemm::linear_backward_data(ctx, &mut enc, &dyt, &wt).unwrap();
        gemm::linear_backward_weight(ctx, &mut enc, &dyt, &xt, &dwt).unwrap();
        gemm::column_sums(ctx, &mut enc, &dyt, (&ones, rows), &dbt).unwrap();
        ctx.queue.submit([enc.finish()]);
        let (rdx, rdw, rdb) = r::linear_backward(&dy, &x, &w, rows, inner, cols);
        close(&read(ctx, &y), &r::linear_forward(&x, &w, Some(&b), rows, inner, cols), 1e-4, "y");
        close(&read(ctx, &dx), &rdx, 1e-4, "dx");
        close(&read(ctx, &dwt), &rdw, 1e-3, "dw");
        close(&read(ctx, &dbt), &rdb, 1e-3, "db");
    }
}

#[test]
fn shape_errors_are_reported() {
    let Some(ctx) = common::gpu() else { return };
    let x = up(&ctx, &[0.5; 2 * 3 * 4 * 4], &[2, 3, 4, 4]);
    let w = up(&ctx, &[0.5; 5 * 2 * 9], &[5, 2, 3, 3]);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let e = gemm::conv2d_forward(&ctx, &mut enc, &x, &w, None, 1, 1).unwrap_err();
    assert!(e.to_string().contains("[5, 2, 3, 3]"), "{e}");
    let e = gemm::linear_forward(&ctx, &mut enc, &x, &w, None).unwrap_err();
    assert!(e.to_string().contains("rank-2"), "{e}");
}

/// Finite differences of `L = Σ y·r` on the reference: its gradients are what the GPU is held to.
#[test]
fn reference_conv_gradients_match_finite_differences() {
    let g = ConvGeom { batch: 2, cin: 2, h: 5, w: 4, cout: 3, ksize: 3, stride: 2, pad: 1 };
    let xs: usize = g.batch * g.cin * g.h * g.w;
    let x = rand(xs, 1);
    let w = rand(g.weight_shape().iter().product(), 2);
    let rw = rand(g.out_shape().iter().product(), 3);
    let loss = |x: &[f32], w: &[f32]| -> f64 {
        r::conv2d_forward(&g, x, w, None).iter().zip(&rw).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum()
    };
    let dx = r::conv2d_backward_data(&g, &rw, &w);
    let dw = r::conv2d_backward_weight(&g, &rw, &x);
    let eps = 1e-2f32;
    for i in (0..xs).step_by(7) {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[i] += eps;
        xm[i] -= eps;
        let fd = (loss(&xp, &w) - loss(&xm, &w)) / (2.0 * f64::from(eps));
        assert!((fd - f64::from(dx[i])).abs() < 1e-3, "dx[{i}]: fd {fd} vs {}", dx[i]);
    }
    for i in 0..w.len() {
        let (mut wp, mut wm) = (w.clone(), w.clone());
        wp[i] += eps;
        wm[i] -= eps;
        let fd = (loss(&x, &wp) - loss(&x, &wm)) / (2.0 * f64::from(eps));
        assert!((fd - f64::from(dw[i])).abs() < 1e-3, "dw[{i}]: fd {fd} vs {}", dw[i]);
    }
}
