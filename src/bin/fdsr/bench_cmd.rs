//! `fdsr bench`: the quality table and the codec speed ratios.

use clap::{Args, Subcommand};
use fdsr::bench::{activations, quality, speed};
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
        /// Rounding seed.
        #[arg(long, default_value_t = 0)]
        seed: u32,
    },
    /// Compress/decompress time over a copy kernel's time on the same tensor.
    Codec {
        /// Tensor size in MiB.
        #[arg(long, default_value_t = 64)]
        mib: usize,
        /// Policies to time.
        #[arg(long, default_value = "fdsr:budget=2,uniform:2,division", value_delimiter = ',')]
        policies: Vec<String>,
        /// Timed repetitions (after one warm-up).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
}

fn samples() -> Vec<quality::Sample> {
    let img = activations::smooth_images(32, 32, 32, 3);
    vec![
        quality::Sample {
            name: "smooth conv3x3+ReLU [32,16,32,32]".into(),
            shape: vec![32, 16, 32, 32],
            data: activations::conv3x3_relu(&img, 32, 32, 32, 16, 5),
        },
        quality::Sample { name: "smooth images [32,1,32,32]".into(), shape: vec![32, 1, 32, 32], data: img },
    ]
}

/// Runs the command.
pub fn run(a: &BenchArgs) -> Result<()> {
    let ctx = super::gpu()?;
    println!("adapter: {}", ctx.adapter_description());
    match &a.what {
        What::Quality { seed } => {
            let rows = pollster::block_on(quality::measure(&ctx, &samples(), &quality::default_policies(), *seed))?;
            print!("{}", quality::markdown(&rows));
        }
        What::Codec { mib, policies, reps } => {
            let (shape, x) = speed::activation(*mib);
            println!(
                "| policy | shape | ratio | copy ms | compress ms | decompress ms | compress/copy | decompress/copy |"
            );
            println!("|---|---|---:|---:|---:|---:|---:|---:|");
            for p in policies {
                let policy: Policy = p.parse()?;
                let r = pollster::block_on(speed::measure(&ctx, &shape, &x, &policy, (*reps).max(1)))?;
                println!(
                    "| {} | {:?} | {:.2}x | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                    r.policy,
                    r.shape,
                    r.ratio,
                    r.copy_s * 1e3,
                    r.compress_s * 1e3,
                    r.decompress_s * 1e3,
                    r.compress_s / r.copy_s,
                    r.decompress_s / r.copy_s
                );
            }
        }
    }
    Ok(())
}
