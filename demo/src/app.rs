//! The visualizer app on one screen: the controls on top (play, pause, step, reset, settings,
//! labels left of their controls), then three columns — the two runs' curves and memory, the
//! bit allocation with tabs for the secondary panels, and the codec story of one tile. The run
//! with the chosen policy and the same run with fp32 activations take steps in turn.

use std::cell::RefCell;
use std::rc::Rc;

use fdsr::engine::ModelName;

use crate::frontier::{shipped, Sweep};
use crate::panels::curves::{FP32_COLOUR, POLICY_COLOUR};
use crate::panels::{basis, codec, curves, frontier, memory, story};
use crate::platform;
use crate::run::{due, Run, EVAL_EVERY};
use crate::settings::{PolicyKind, Preset, Settings, Tab, BATCHES, BUDGET_RANGE};
use crate::status::Status;

/// The run, once its device and data are ready (or why they are not).
pub type RunSlot = Rc<RefCell<Option<Result<Run, String>>>>;

/// Called with the settings whenever they change (the web build writes the URL hash).
type SettingsHook = Box<dyn Fn(&Settings)>;

type StoryKey = (usize, u64, story::View, u32);

/// Steps between fresh reads of the codec story's layer output.
const STORY_EVERY: usize = 10;

/// Application state.
pub struct App {
    slot: RunSlot,
    /// The same run with fp32 activations (made with the first frame that has a run, its
    /// trainer after the policy run's first step).
    base: Option<Run>,
    /// Settings being edited (the run's are applied on reset, the view's at once).
    pub settings: Settings,
    /// Training one step per frame.
    pub playing: bool,
    /// Messages for the user (e.g. a bad URL hash).
    pub notices: Vec<String>,
    explorer: basis::Explorer,
    sweep: Result<Sweep, String>,
    /// Steps of the run at the last story read.
    story_read_at: Option<usize>,
    /// Steps of the run at the last evaluation on the held-out images.
    eval_at: Option<usize>,
    /// The story told for (steps, reads, view, budget).
    story: Option<(StoryKey, Option<story::Told>)>,
    written: Option<Settings>,
    /// The three columns fitted the window in the last frame.
    fits: bool,
    /// Where the story's feature map was drawn, and its height and width in values.
    story_map: Option<(egui::Rect, [usize; 2])>,
    /// The largest batch of the policy run and of the fp32 run under the cap, as last shown.
    fits_under_cap: Vec<u64>,
    on_settings: Option<SettingsHook>,
}

/// `settings` with fp32 activations.
fn fp32(settings: &Settings) -> Settings {
    Settings { policy: PolicyKind::None, ..settings.clone() }
}

impl App {
    /// An app showing `slot`'s run, with `settings` in the controls.
    pub fn new(slot: RunSlot, settings: Settings, notices: Vec<String>) -> App {
        App {
            slot,
            base: None,
            settings,
            playing: true,
            notices,
            explorer: basis::Explorer::default(),
            sweep: shipped(),
            story_read_at: None,
            eval_at: None,
            story: None,
            written: None,
            fits: false,
            fits_under_cap: Vec::new(),
            story_map: None,
            on_settings: None,
        }
    }

    /// Calls `f` with the settings whenever they change (the web writes the URL hash).
    pub fn on_settings(mut self, f: impl Fn(&Settings) + 'static) -> App {
        self.on_settings = Some(Box::new(f));
        self
    }

    /// The run, if ready.
    pub fn run(&self) -> Option<Run> {
        match &*self.slot.borrow() {
            Some(Ok(r)) => Some(r.clone()),
            _ => None,
        }
    }

    fn controls(&mut self, ui: &mut egui::Ui, run: &Run, base: &Run) {
        ui.horizontal(|ui| {
            let label = if self.playing { "pause" } else { "play" };
            if ui.button(label).clicked() {
                self.playing = !self.playing;
            }
            if ui.button("step").clicked() {
                self.playing = false;
                step_next(run, base);
            }
            let reset = ui.button("reset").clicked();
            ui.separator();
            ui.label("preset");
            let current = Preset::of(&self.settings);
            let mut picked = current;
            egui::ComboBox::from_id_salt("preset")
                .width(70.0)
                .selected_text(current.map_or("custom", Preset::as_str))
                .show_ui(ui, |ui| {
                    for p in Preset::ALL {
                        let (m, b) = p.model_batch();
                        ui.selectable_value(&mut picked, Some(p), format!("{}: {m}, batch {b}", p.as_str()));
                    }
                });
            let preset = picked != current;
            if let Some(p) = picked.filter(|_| preset) {
                (self.settings.model, self.settings.batch) = p.model_batch();
            }
            ui.label("model");
            egui::ComboBox::from_id_salt("model")
                .width(60.0)
                .selected_text(if self.settings.model == ModelName::Cnn { "cnn" } else { "tiny" })
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.settings.model, ModelName::Tiny, "tiny");
                    ui.selectable_value(&mut self.settings.model, ModelName::Cnn, "cnn");
                });
            ui.label("policy");
            egui::ComboBox::from_id_salt("policy").width(80.0).selected_text(self.settings.policy.as_str()).show_ui(
                ui,
                |ui| {
                    for k in PolicyKind::ALL {
                        ui.selectable_value(&mut self.settings.policy, k, k.as_str());
                    }
                },
            );
            ui.label("budget (bits/value)");
            ui.add(egui::Slider::new(&mut self.settings.budget, BUDGET_RANGE).step_by(0.25));
            ui.label("lr");
            ui.add(egui::Slider::new(&mut self.settings.lr, 0.001..=0.5).logarithmic(true));
            ui.label("batch");
            egui::ComboBox::from_id_salt("batch").width(50.0).selected_text(self.settings.batch.to_string()).show_ui(
                ui,
                |ui| {
                    for b in BATCHES {
                        ui.selectable_value(&mut self.settings.batch, b, b.to_string());
                    }
                },
            );
            ui.label("LSH reuse");
            ui.checkbox(&mut self.settings.reuse, "");
            if reset || preset || self.settings.policy != run.shared.borrow().settings.policy {
                self.reset(run, base);
            }
        });
    }

    /// Starts both runs over with the edited settings (nothing while a step or read runs).
    pub fn reset(&mut self, run: &Run, base: &Run) {
        if run.busy() || base.busy() {
            return;
        }
        run.reset(self.settings.clone());
        base.reset(fp32(&self.settings));
        self.story_read_at = None;
        self.eval_at = None;
    }

    fn header(&self, ui: &mut egui::Ui, run: &Run, status: &Status) {
        let sh = run.shared.borrow();
        ui.horizontal_wrapped(|ui| {
            ui.label(format!(
                "{} · data: {} · step {} · loss {:.3} · {:.1} steps/s",
                status.adapter, run.data.source, status.steps, status.loss_last, status.steps_per_s
            ));
            if !sh.settings.same_run(&self.settings) {
                ui.colored_label(egui::Color32::YELLOW, "settings changed: press reset to apply them");
            }
            if let Some(e) = &sh.error {
                ui.colored_label(egui::Color32::LIGHT_RED, e);
            }
            for n in &self.notices {
                ui.colored_label(egui::Color32::YELLOW, n);
            }
        });
    }

    fn left(&mut self, ui: &mut egui::Ui, run: &Run, base: &Run) {
        let (sh, bh) = (run.shared.borrow(), base.shared.borrow());
        let name = sh.settings.policy_label();
        let runs = [(name.as_str(), &sh.history, POLICY_COLOUR), ("fp32 (policy none)", &bh.history, FP32_COLOUR)];
        ui.strong("loss and accuracy: the policy beside fp32 (EMA, raw faint)");
        curves::show(ui, &runs, 235.0);
        ui.separator();
        memory::bars(ui, &runs);
        let [p, f] = memory::estimates(&sh.history, &bh.history, sh.settings.batch, sh.fixed_bytes);
        let rows = [(name.as_str(), p, POLICY_COLOUR), ("fp32 (policy none)", f, FP32_COLOUR)];
        self.fits_under_cap = memory::fit(ui, &mut self.settings.cap_mib, &rows).iter().map(|f| f.batch()).collect();
    }

    fn middle(&mut self, ui: &mut egui::Ui, run: &Run) {
        let sh = run.shared.borrow();
        ui.strong("bit allocation per tensor × band over the steps");
        codec::bits(ui, &sh.history);
        ui.separator();
        ui.horizontal(|ui| {
            for t in Tab::ALL {
                ui.selectable_value(&mut self.settings.tab, t, t.as_str());
            }
        });
        match self.settings.tab {
            Tab::Frontier => {
                let live = sh.history.last().zip(sh.history.tests.last()).map(|(s, t)| frontier::Live {
                    ratio: s.saved.ratio(),
                    accuracy: t.accuracy,
                    step: t.step,
                    images: t.images,
                });
                frontier::show(ui, &self.sweep, live, 300.0);
            }
            Tab::Energy => codec::energy(ui, &sh.history),
            Tab::Tiles => codec::tiles(ui, &sh.history),
            Tab::Pool => match sh.history.last() {
                Some(s) => {
                    ui.small("the device pool (both runs share one device)");
                    memory::pool(ui, &s.memory);
                }
                None => {
                    ui.label("no steps yet");
                }
            },
            Tab::Basis => self.explorer.show(ui),
        }
    }

    /// The codec story column; returns whether a read of the layer's output is asked for.
    fn right(&mut self, ui: &mut egui::Ui, run: &Run) -> bool {
        let sh = run.shared.borrow();
        ui.strong("the codec story of one tile");
        let layers = sh.layers.max(1);
        let [image, channel, ty, tx] = self.settings.tile;
        let mut view = story::View { layer: self.settings.layer, pick: crate::story::Pick { image, channel, ty, tx } };
        if let Some(Ok(a)) = &sh.inspect {
            view.pick = view.pick.clamped(a.shape);
        }
        let key = (sh.history.steps.len(), sh.reads, view, self.settings.budget.to_bits());
        if self.story.as_ref().is_none_or(|s| s.0 != key) {
            let records = sh.history.last().map_or(&[][..], |s| &s.records[..]);
            let live = story::Live {
                records,
                budget: (f64::from(self.settings.budget), f64::from(sh.settings.budget)),
                max_binding: run.ctx.max_binding_bytes(),
            };
            let told = match &sh.inspect {
                Some(Ok(a)) if a.layer == view.layer => Some(story::compute(a, view, &live)),
                _ => None,
            };
            self.story = Some((key, told));
        }
        let told = self.story.as_ref().and_then(|s| s.1.as_ref());
        let (read, map) = story::show(ui, &mut view, layers, sh.inspect.as_ref(), told);
        self.story_map =
            map.zip(sh.inspect.as_ref().and_then(|a| a.as_ref().ok())).map(|(r, a)| (r, [a.shape[2], a.shape[3]]));
        self.settings.layer = view.layer;
        self.settings.tile = [view.pick.image, view.pick.channel, view.pick.ty, view.pick.tx];
        read
    }

    /// Draws one frame and, while playing, starts the next step.
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let run = match &*self.slot.borrow() {
            None => {
                ui.heading("fdsr — compressed-activation training, live");
                ui.label("starting the GPU device and loading data…");
                ui.ctx().request_repaint_after(std::time::Duration::from_millis(200));
                return;
            }
            Some(Err(e)) => {
                ui.colored_label(egui::Color32::LIGHT_RED, e);
                return;
            }
            Some(Ok(run)) => run.clone(),
        };
        let base = self.base.get_or_insert_with(|| run.sibling(fp32(&run.shared.borrow().settings))).clone();
        for r in [&run, &base] {
            r.shared.borrow_mut().repaint.get_or_insert_with(|| ui.ctx().clone());
        }
        let status = self.status().unwrap_or_else(|| Status::of(&run));
        egui::Panel::top("controls").show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.strong("fdsr — compressed-activation training, live");
            });
            self.controls(ui, &run, &base);
            self.header(ui, &run, &status);
        });
        let mut read = false;
        let mut bottom = 0f32;
        egui::CentralPanel::default().show(ui, |ui| {
            ui.columns(3, |cols| {
                self.left(&mut cols[0], &run, &base);
                self.middle(&mut cols[1], &run);
                read = self.right(&mut cols[2], &run);
                bottom = cols.iter().map(|c| c.min_rect().bottom()).fold(0.0, f32::max);
            });
        });
        self.fits = bottom <= ui.ctx().content_rect().bottom();
        let steps = run.steps();
        let story_due = due(steps, self.story_read_at, STORY_EVERY);
        if (read || story_due) && steps > 0 && !run.busy() && !base.busy() {
            if let Some(t) = run.inspect_task(self.settings.layer) {
                self.story_read_at = Some(steps);
                platform::spawn(t);
            }
        }
        // The live point of the frontier: test accuracy on held-out images, every few steps.
        if due(steps, self.eval_at, EVAL_EVERY) && !run.busy() && !base.busy() {
            if let Some(t) = run.eval_task() {
                self.eval_at = Some(steps);
                platform::spawn(t);
            }
        }
        // The fp32 run's trainer is made after the first step of the policy run.
        if base.pending() && steps > 0 && !run.busy() {
            base.reset(fp32(&run.shared.borrow().settings));
        }
        // While playing, a finished step asks for the next frame (natively the step ends inside
        // `spawn`, on the web later).
        if self.playing {
            step_next(&run, &base);
        }
        if self.written.as_ref() != Some(&self.settings) {
            if let Some(f) = &self.on_settings {
                f(&self.settings);
            }
            self.written = Some(self.settings.clone());
        }
        platform::publish(&status);
    }

    /// The fp32 run beside the policy run, once made.
    pub fn base(&self) -> Option<Run> {
        self.base.clone()
    }

    /// The status of both runs and of the panels, once the runs are made.
    pub fn status(&self) -> Option<Status> {
        let (run, base) = (self.run()?, self.base.as_ref()?);
        let mut s = Status::of(&run);
        let b = Status::of(base);
        (s.base_steps, s.base_loss_last, s.base_fp32_bytes) = (b.steps, b.loss_last, b.fp32_bytes);
        if let Some((_, Some(Ok((_, _, _, t))))) = &self.story {
            s.story_bands = t.bands.iter().filter(|b| b.bytes > 0.0).count();
            s.story_bytes = t.stored_bytes as u64;
        }
        s.fits = self.fits;
        if let Some((r, [h, w])) = self.story_map {
            s.story_map = [r.min.x, r.min.y, r.width(), r.height()];
            s.story_plane = [h, w];
        }
        if let [p, f] = self.fits_under_cap[..] {
            (s.cap_batch, s.cap_batch_fp32) = (p, f);
        }
        if let Some(t) = run.shared.borrow().history.tests.last() {
            (s.test_evals, s.test_accuracy, s.test_seconds) =
                (run.shared.borrow().history.tests.len(), t.accuracy, t.seconds);
        }
        s.frontier_points = self.sweep.as_ref().map_or(0, |s| s.points.len());
        Some(s)
    }
}

/// Starts a step of the run that is behind (the policy run on a tie), one task at a time on the
/// shared device.
fn step_next(run: &Run, base: &Run) {
    if run.busy() || base.busy() {
        return;
    }
    let (first, second) = if base.steps() < run.steps() { (base, run) } else { (run, base) };
    if let Some(t) = first.step_task().or_else(|| second.step_task()) {
        platform::spawn(t);
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        egui::CentralPanel::default().show(ui, |ui| self.frame(ui));
    }
}
