//! The native entry: argument parsing, the device and data, then the window or the bench.

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use fdsr_demo::{data, status::Status, App, Run, Settings};

struct Args {
    data: PathBuf,
    settings: String,
    bench_steps: Option<u64>,
    write_subset: Option<PathBuf>,
    status_file: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        data: fdsr::data::DatasetName::FashionMnist.default_dir(),
        settings: String::new(),
        bench_steps: None,
        write_subset: None,
        status_file: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(value()?),
            "--settings" => a.settings = value()?,
            "--bench-steps" => {
                let v = value()?;
                a.bench_steps = Some(v.parse().map_err(|_| format!("--bench-steps {v}: not a number"))?);
            }
            "--write-subset" => a.write_subset = Some(PathBuf::from(value()?)),
            "--status-file" => a.status_file = Some(PathBuf::from(value()?)),
            "-h" | "--help" => {
                return Err("usage: fdsr-demo [--data DIR] [--settings model=tiny&policy=fdsr&budget=4&lr=0.05&batch=32&reuse=1] [--bench-steps N] [--write-subset DIR] [--status-file PATH]".into())
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    Ok(a)
}

/// Parses the arguments, makes the run, then opens the window or runs the bench.
pub fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let (settings, mut notices) = Settings::from_query(&args.settings);
    for n in &notices {
        eprintln!("{n}");
    }
    if let Some(path) = args.status_file.clone() {
        fdsr_demo::platform::set_status_file(path);
    }
    let data = match (data::fetch_and_load(&args.data), &args.write_subset) {
        (Ok(d), _) => d,
        (Err(e), Some(_)) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
        (Err(e), None) => {
            let msg = format!("Fashion-MNIST is not available ({e}): training on synthetic images");
            eprintln!("{msg}");
            notices.push(msg);
            data::synthetic(data::TRAIN, data::TEST)
        }
    };
    if let Some(dir) = &args.write_subset {
        return write_subset(&data, dir);
    }
    let ctx = match pollster::block_on(fdsr::GpuContext::new()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let run = Run::new(ctx, data, settings.clone());
    match args.bench_steps {
        Some(n) => bench(&run, n),
        None => window(run, settings, notices),
    }
}

/// Writes the run's subset as IDX files into `dir` (the browser bundle's `data/`).
fn write_subset(data: &fdsr_demo::Data, dir: &std::path::Path) -> ExitCode {
    use fdsr::data::Split;
    match data.train.save(dir, Split::Train).and_then(|()| data.test.save(dir, Split::Test)) {
        Ok(()) => {
            println!("wrote {} + {} images to {}", data.train.len(), data.test.len(), dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(run: &Run, n: u64) -> ExitCode {
    for _ in 0..n {
        match run.step_task() {
            Some(t) => pollster::block_on(t),
            None => break,
        }
    }
    let s = Status::of(run);
    println!("{}", s.to_json());
    if s.error.is_empty() && s.steps == n {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn window(run: Run, settings: Settings, notices: Vec<String>) -> ExitCode {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default().with_inner_size([1280.0, 800.0]),
        ..Default::default()
    };
    let slot = Rc::new(RefCell::new(Some(Ok(run))));
    let app = App::new(slot, settings, notices);
    match eframe::run_native("fdsr visualizer", options, Box::new(|_cc| Ok(Box::new(app)))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
