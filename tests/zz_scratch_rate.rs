mod common;
use fdsr::engine::gemm;
use fdsr::engine::Tensor;
use fdsr::gpu::Category;
use std::time::Instant;

#[test]
#[ignore]
fn rate() {
    let ctx = common::gpu().unwrap();
    for (b, ci, h, co) in [(128usize, 32usize, 32usize, 32usize), (128, 64, 16, 64), (128, 64, 8, 128)] {
        let x = Tensor::from_slice(&ctx, &vec![0.5; b * ci * h * h], &[b, ci, h, h], Category::Workspace).unwrap();
        let w = Tensor::from_slice(&ctx, &vec![0.1; co * ci * 9], &[co, ci, 3, 3], Category::Weights).unwrap();
        let g = gemm::ConvGeom::of(x.shape(), w.shape(), 1, 1).unwrap();
        let dy = Tensor::from_slice(&ctx, &vec![0.1; b * co * h * h], &[b, co, h, h], Category::Workspace).unwrap();
        let dw = Tensor::uninit(&ctx, w.shape(), Category::Gradients);
        let flops = 2.0 * (b * co * h * h * ci * 9) as f64;
        for which in 0..3 {
            let mut best = f64::MAX;
            for _ in 0..3 {
                let mut enc = ctx.device.create_command_encoder(&Default::default());
                let t = Instant::now();
                match which {
                    0 => {
                        gemm::conv2d_forward(&ctx, &mut enc, &x, &w, None, 1, 1).unwrap();
                    }
                    1 => {
                        gemm::conv2d_backward_data(&ctx, &mut enc, &g, &dy, &w).unwrap();
                    }
                    _ => {
                        gemm::conv2d_backward_weight(&ctx, &mut enc, &g, &dy, &x, &dw).unwrap();
                    }
                }
                ctx.queue.submit([enc.finish()]);
                ctx.device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!("b{b} ci{ci} h{h} co{co} mode{which}: {:.1} ms, {:.1} GFLOP/s", best * 1e3, flops / best / 1e9);
        }
    }
}
