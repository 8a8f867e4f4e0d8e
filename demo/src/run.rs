//! The live training run: a [`Session`] on its own GPU device, shared with the UI through
//! `Rc<RefCell<…>>` and advanced one step at a time by an async task (blocked on natively,
//! spawned on the web), so nothing waits on the GPU inside a frame in the browser.

use std::cell::RefCell;
use std::rc::Rc;

use fdsr::data::Dataset;
use fdsr::engine::session::subset;
use fdsr::engine::Session;
use fdsr::engine::Trainer;
use fdsr::GpuContext;
use web_time::Instant;

use crate::activation::{read_activation, Activation};
use crate::history::{History, Snapshot, TestPoint};
use crate::settings::PolicyKind;
use crate::settings::Settings;
use crate::timeline;

/// Held-out test images each evaluation of the run uses (the first of the test subset).
pub const EVAL_IMAGES: usize = 256;
/// Steps of the run between evaluations on the held-out images.
pub const EVAL_EVERY: usize = 20;
/// Images per batch of an evaluation.
const EVAL_BATCH: usize = 64;

/// Whether a periodic task is due after `steps` steps, last done after `last` (`None`: never),
/// every `every` steps: after the first step, then every `every` steps.
pub fn due(steps: usize, last: Option<usize>, every: usize) -> bool {
    steps > 0 && last.is_none_or(|at| steps >= at + every.max(1))
}

/// The run's name on the page's timeline: its policy, `fp32` for none.
fn label(settings: &Settings) -> &'static str {
    match settings.policy {
        PolicyKind::None => "fp32",
        p => p.as_str(),
    }
}

/// Training and test images of the run.
#[derive(Clone)]
pub struct Data {
    /// Training images.
    pub train: Dataset,
    /// Test images (the codec story's inputs).
    pub test: Dataset,
    /// Where they came from, for the header.
    pub source: String,
}

/// State shared by the UI and the step task.
pub struct Shared {
    /// The session; `None` while a step holds it (or before the first reset).
    pub session: Option<Session>,
    /// Measurements so far.
    pub history: History,
    /// The last error, shown in the UI; training pauses on one.
    pub error: Option<String>,
    /// A step task is running.
    pub busy: bool,
    /// Settings of the current session.
    pub settings: Settings,
    /// When the session was made.
    pub created: Instant,
    /// Seconds from the session's creation to the end of its first step.
    pub first_step_s: Option<f64>,
    /// Top-level layers of the model (kept while a task holds the session).
    pub layers: usize,
    /// Bytes of the run that do not grow with the batch: weights, gradients, optimizer state.
    pub fixed_bytes: u64,
    /// Seconds spent in steps (the step tasks' own time).
    pub step_seconds: f64,
    /// The codec story's last read activation.
    pub inspect: Option<Result<Activation, String>>,
    /// Reads of an activation so far.
    pub reads: u64,
    /// The UI to repaint when a task ends (set by the app's frames; the next frame follows a
    /// finished step instead of repainting all the time, which on a software GPU would take
    /// the GPU from training).
    pub repaint: Option<egui::Context>,
}

impl Shared {
    fn request_repaint(&self) {
        if let Some(ctx) = &self.repaint {
            ctx.request_repaint();
        }
    }
}

/// Handle to the run: the device, the data and the shared state.
#[derive(Clone)]
pub struct Run {
    /// The training device (separate from the renderer's).
    pub ctx: Rc<GpuContext>,
    /// The images.
    pub data: Rc<Data>,
    /// The shared state.
    pub shared: Rc<RefCell<Shared>>,
    /// The held-out images of the periodic evaluation (the first [`EVAL_IMAGES`] test images).
    pub eval: Rc<Dataset>,
}

impl Run {
    /// A run on `ctx` over `data` with `settings` (an invalid setting is reported in `error`).
    pub fn new(ctx: GpuContext, data: Data, settings: Settings) -> Run {
        let run = Run::on(Rc::new(ctx), Rc::new(data), settings.clone());
        run.reset(settings);
        run
    }

    /// A second run on this run's device and data (the fp32 run beside it), without a session
    /// until [`Run::reset`] makes one (so making its trainer need not delay the first step).
    pub fn sibling(&self, settings: Settings) -> Run {
        Run { shared: Run::on(self.ctx.clone(), self.data.clone(), settings).shared, ..self.clone() }
    }

    /// Made, but not reset yet: no session and no error.
    pub fn pending(&self) -> bool {
        let sh = self.shared.borrow();
        sh.session.is_none() && sh.error.is_none() && !sh.busy
    }

    fn on(ctx: Rc<GpuContext>, data: Rc<Data>, settings: Settings) -> Run {
        let shared = Shared {
            session: None,
            history: History::default(),
            error: None,
            busy: false,
            settings: settings.clone(),
            created: Instant::now(),
            first_step_s: None,
            layers: 0,
            fixed_bytes: 0,
            step_seconds: 0.0,
            inspect: None,
            reads: 0,
            repaint: None,
        };
        let n = EVAL_IMAGES.min(data.test.len());
        // The first `n` of the test images always exist: the subset cannot fail.
        let eval = subset(&data.test, &(0..n).collect::<Vec<_>>()).unwrap_or_else(|_| data.test.clone());
        Run { ctx, data, shared: Rc::new(RefCell::new(shared)), eval: Rc::new(eval) }
    }

    /// Starts over with `settings`: a fresh model, optimizer and history.
    pub fn reset(&self, settings: Settings) {
        let label = label(&settings);
        let made = settings
            .train_config()
            .and_then(|c| Trainer::new(&self.ctx, c).map_err(|e| e.to_string()))
            .and_then(|t| Session::new(t, self.data.train.clone()).map_err(|e| e.to_string()));
        timeline::mark(&format!("{label} run: trainer made"));
        let mut sh = self.shared.borrow_mut();
        sh.history = History::default();
        sh.settings = settings;
        sh.created = Instant::now();
        sh.first_step_s = None;
        sh.step_seconds = 0.0;
        match made {
            Ok(s) => {
                sh.layers = s.trainer.model.layer_count();
                let params = s.trainer.model.parameter_count() as u64;
                let state: u64 = s
                    .trainer
                    .opt
                    .state
                    .iter()
                    .map(|(_, a, b)| (a.numel() + b.as_ref().map_or(0, |b| b.numel())) as u64)
                    .sum();
                sh.fixed_bytes = 4 * (2 * params + state);
                sh.session = Some(s);
                sh.error = None;
            }
            Err(e) => {
                sh.session = None;
                sh.error = Some(e);
            }
        }
    }

    /// A step or a read is running.
    pub fn busy(&self) -> bool {
        self.shared.borrow().busy
    }

    /// Steps taken.
    pub fn steps(&self) -> usize {
        self.shared.borrow().history.steps.len()
    }

    /// `true` when a step may start now (a session, no step running, no error).
    pub fn can_step(&self) -> bool {
        let sh = self.shared.borrow();
        sh.session.is_some() && !sh.busy && sh.error.is_none()
    }

    /// Marks a step as running and returns the task that takes it, or `None` when none may
    /// start. The caller blocks on it (native) or spawns it (web).
    pub fn step_task(&self) -> Option<impl std::future::Future<Output = ()> + 'static> {
        if !self.can_step() {
            return None;
        }
        let mut sh = self.shared.borrow_mut();
        let session = sh.session.take()?;
        sh.busy = true;
        drop(sh);
        let run = self.clone();
        Some(async move { run.finish_step(session).await })
    }

    async fn finish_step(self, mut session: Session) {
        let t0 = Instant::now();
        // The first two steps of each run go on the page's timeline: the first builds the
        // pipelines, the second shows what a step costs without them.
        let marked = {
            let sh = self.shared.borrow();
            let k = sh.history.steps.len() + 1;
            (k <= 2).then(|| format!("{} run, step {k}", label(&sh.settings)))
        };
        let mark = |what: &str| {
            if let Some(m) = &marked {
                timeline::mark(&format!("{m}: {what}"));
            }
        };
        mark("started");
        let out = async {
            session.step(&self.ctx).await?;
            mark("recorded and submitted");
            let m = session.trainer.read_metrics(&self.ctx).await?;
            let saved = session.trainer.saved.take_stats(&self.ctx).await?;
            let records = session.trainer.saved.read_records(&self.ctx).await?;
            Ok::<_, fdsr::FdsrError>((m, saved, records))
        }
        .await;
        mark("read back");
        let mut sh = self.shared.borrow_mut();
        sh.step_seconds += t0.elapsed().as_secs_f64();
        match out {
            Ok((m, saved, records)) => {
                let snap = Snapshot {
                    step: session.trainer.step,
                    loss: m.loss,
                    accuracy: m.accuracy,
                    memory: self.ctx.pool.report(),
                    saved,
                    records,
                };
                sh.history.push(snap);
                if sh.first_step_s.is_none() {
                    sh.first_step_s = Some(sh.created.elapsed().as_secs_f64());
                }
            }
            Err(e) => sh.error = Some(e.to_string()),
        }
        if session.done() {
            sh.error.get_or_insert_with(|| "the run's steps are all done: reset to start again".into());
        }
        sh.session = Some(session);
        sh.busy = false;
        sh.request_repaint();
    }

    /// Takes the session out for a task and marks it busy; `None` while a step or read runs
    /// (or, with `healthy`, after an error).
    fn claim(&self, healthy: bool) -> Option<Session> {
        let mut sh = self.shared.borrow_mut();
        if sh.busy || (healthy && sh.error.is_some()) {
            return None;
        }
        let session = sh.session.take()?;
        sh.busy = true;
        Some(session)
    }

    /// Marks the session as busy and returns the task that reads layer `layer`'s output for
    /// the codec story, or `None` while a step runs.
    pub fn inspect_task(&self, layer: usize) -> Option<impl std::future::Future<Output = ()> + 'static> {
        let mut session = self.claim(false)?;
        let run = self.clone();
        Some(async move {
            let out = read_activation(&run.ctx, &mut session, &run.data.test, layer).await.map_err(|e| e.to_string());
            let mut sh = run.shared.borrow_mut();
            sh.inspect = Some(out);
            sh.reads += 1;
            sh.session = Some(session);
            sh.busy = false;
            sh.request_repaint();
        })
    }

    /// Marks the session as busy and returns the task that evaluates the model (running
    /// batch-norm statistics, full-precision compute) on the held-out images and adds a
    /// [`TestPoint`] to the history, or `None` while a step or read runs. On the web each batch
    /// is awaited, so the page keeps drawing.
    pub fn eval_task(&self) -> Option<impl std::future::Future<Output = ()> + 'static> {
        let mut session = self.claim(true)?;
        let run = self.clone();
        Some(async move {
            let (norm, t0) = (session.norm, Instant::now());
            let out = session.trainer.evaluate(&run.ctx, &run.eval, norm, EVAL_BATCH).await;
            let seconds = t0.elapsed().as_secs_f64();
            let mut sh = run.shared.borrow_mut();
            match out {
                Ok(m) => {
                    let step = session.trainer.step;
                    sh.history.tests.push(TestPoint {
                        step,
                        loss: m.loss,
                        accuracy: m.accuracy,
                        images: m.images,
                        seconds,
                    });
                }
                Err(e) => sh.error = Some(format!("evaluation on the held-out images: {e}")),
            }
            sh.session = Some(session);
            sh.busy = false;
            sh.request_repaint();
        })
    }

    /// Steps per second over the steps taken (their own time, not the frames between them).
    pub fn steps_per_second(&self) -> Option<f64> {
        let sh = self.shared.borrow();
        let n = sh.history.steps.len();
        (n > 0 && sh.step_seconds > 0.0).then(|| n as f64 / sh.step_seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_tasks_fall_due_after_the_first_step_then_every_few_steps() {
        assert!(!due(0, None, 20), "nothing to evaluate before a step");
        assert!(due(1, None, 20));
        assert!(!due(20, Some(1), 20));
        assert!(due(21, Some(1), 20));
        assert!(due(40, Some(1), 20));
        // A reset (fewer steps than at the last time) waits for `None` again, never underflows.
        assert!(!due(3, Some(21), 20));
        // `every` 0 is read as 1.
        assert!(!due(5, Some(5), 0) && due(6, Some(5), 0));
    }
}
