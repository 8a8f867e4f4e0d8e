//! The visualizer app: controls (play, pause, step, reset, settings) and the panels; one
//! training step per frame while playing.

use std::cell::RefCell;
use std::rc::Rc;

use fdsr::engine::ModelName;

use crate::panels::{basis, codec, curves, inspector, memory};
use crate::platform;
use crate::run::Run;
use crate::settings::{PolicyKind, Settings, BATCHES, BUDGET_RANGE};
use crate::status::Status;

/// The run, once its device and data are ready (or why they are not).
pub type RunSlot = Rc<RefCell<Option<Result<Run, String>>>>;

/// Called with the settings whenever they are applied (the web build writes the URL hash).
type SettingsHook = Box<dyn Fn(&Settings)>;

/// Application state.
pub struct App {
    slot: RunSlot,
    /// Settings being edited (applied on reset).
    pub settings: Settings,
    /// Training one step per frame.
    pub playing: bool,
    /// Messages for the user (e.g. a bad URL hash).
    pub notices: Vec<String>,
    explorer: basis::Explorer,
    pick: inspector::Pick,
    on_settings: Option<SettingsHook>,
}

impl App {
    /// An app showing `slot`'s run, with `settings` in the controls.
    pub fn new(slot: RunSlot, settings: Settings, notices: Vec<String>) -> App {
        App {
            slot,
            settings,
            playing: true,
            notices,
            explorer: basis::Explorer::default(),
            pick: inspector::Pick::default(),
            on_settings: None,
        }
    }

    /// Calls `f` with the settings whenever a reset applies them (the web writes the URL hash).
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

    fn controls(&mut self, ui: &mut egui::Ui, run: &Run) {
        ui.horizontal_wrapped(|ui| {
            let label = if self.playing { "pause" } else { "play" };
            if ui.button(label).clicked() {
                self.playing = !self.playing;
            }
            if ui.button("step").clicked() {
                self.playing = false;
                if let Some(t) = run.step_task() {
                    platform::spawn(t);
                }
            }
            let reset = ui.button("reset").clicked();
            ui.separator();
            egui::ComboBox::from_label("model")
                .selected_text(if self.settings.model == ModelName::Cnn { "cnn" } else { "tiny" })
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.settings.model, ModelName::Tiny, "tiny");
                    ui.selectable_value(&mut self.settings.model, ModelName::Cnn, "cnn");
                });
            egui::ComboBox::from_label("policy").selected_text(self.settings.policy.as_str()).show_ui(ui, |ui| {
                for k in PolicyKind::ALL {
                    ui.selectable_value(&mut self.settings.policy, k, k.as_str());
                }
            });
            ui.add(
                egui::Slider::new(&mut self.settings.budget, BUDGET_RANGE).step_by(0.25).text("budget (bits/value)"),
            );
            ui.checkbox(&mut self.settings.reuse, "LSH reuse (fdsr)");
            ui.add(egui::Slider::new(&mut self.settings.lr, 0.001..=0.5).logarithmic(true).text("lr"));
            egui::ComboBox::from_label("batch").selected_text(self.settings.batch.to_string()).show_ui(ui, |ui| {
                for b in BATCHES {
                    ui.selectable_value(&mut self.settings.batch, b, b.to_string());
                }
            });
            if reset {
                self.reset(run);
            }
        });
        let sh = run.shared.borrow();
        if sh.settings != self.settings {
            ui.label("settings changed: press reset to apply them");
        }
    }

    /// Starts over with the edited settings.
    pub fn reset(&mut self, run: &Run) {
        if run.shared.borrow().busy {
            return;
        }
        run.reset(self.settings.clone());
        if let Some(f) = &self.on_settings {
            f(&self.settings);
        }
    }

    fn header(&self, ui: &mut egui::Ui, run: &Run) {
        let status = Status::of(run);
        let sh = run.shared.borrow();
        ui.label(format!(
            "{} · {} · data: {} · step {} · loss {:.4} · {:.1} steps/s",
            status.adapter,
            sh.settings.policy_label(),
            run.data.source,
            status.steps,
            status.loss_last,
            status.steps_per_s
        ));
        if let Some(e) = &sh.error {
            ui.colored_label(egui::Color32::LIGHT_RED, e);
        }
        for n in &self.notices {
            ui.colored_label(egui::Color32::YELLOW, n);
        }
    }

    fn panels(&mut self, ui: &mut egui::Ui, run: &Run) {
        egui::ScrollArea::vertical().show(ui, |ui| {
            let sh = run.shared.borrow();
            let h = &sh.history;
            egui::CollapsingHeader::new("loss and accuracy").default_open(true).show(ui, |ui| curves::show(ui, h));
            egui::CollapsingHeader::new("memory").default_open(true).show(ui, |ui| memory::show(ui, h));
            egui::CollapsingHeader::new("bit allocation per tensor × band over time")
                .default_open(true)
                .show(ui, |ui| codec::bits(ui, h));
            egui::CollapsingHeader::new("band energy per tensor")
                .default_open(true)
                .show(ui, |ui| codec::energy(ui, h));
            egui::CollapsingHeader::new("tile classes and LSH reuse")
                .default_open(true)
                .show(ui, |ui| codec::tiles(ui, h));
            let layers = sh.session.as_ref().map_or(8, |s| s.trainer.model.layer_count());
            let policy = sh.settings.policy().ok().flatten();
            let mut read = false;
            egui::CollapsingHeader::new("block inspector").default_open(false).show(ui, |ui| {
                read = inspector::show(ui, &mut self.pick, layers, sh.inspect.as_ref(), policy.as_ref());
            });
            drop(sh);
            if read {
                self.playing = false;
                if let Some(t) = run.inspect_task(self.pick.layer) {
                    platform::spawn(t);
                }
            }
            egui::CollapsingHeader::new("DCT basis explorer").default_open(false).show(ui, |ui| self.explorer.show(ui));
        });
    }

    /// Draws one frame and, while playing, starts the next step.
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        ui.heading("fdsr — compressed-activation training, live");
        let run = match &*self.slot.borrow() {
            None => {
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
        run.shared.borrow_mut().repaint.get_or_insert_with(|| ui.ctx().clone());
        self.controls(ui, &run);
        self.header(ui, &run);
        ui.separator();
        self.panels(ui, &run);
        // While playing, a finished step asks for the next frame (natively the step ends inside
        // `spawn`, on the web later).
        if self.playing {
            if let Some(t) = run.step_task() {
                platform::spawn(t);
            }
        }
        platform::publish(&Status::of(&run));
    }
}

impl eframe::App for App {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        egui::CentralPanel::default().show(ui, |ui| self.frame(ui));
    }
}
