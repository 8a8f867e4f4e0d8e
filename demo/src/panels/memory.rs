//! Memory bars of the two runs next to each other: what the last step's saved activations take
//! in the fp32 run and, stored, in the run with the chosen policy, on one scale; the device
//! pool's live and peak bytes by category below (the two runs share one device).

use egui::Color32;
use fdsr::gpu::{MemoryReport, CATEGORIES};

use crate::history::{memory_gauge, History};

fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / (1024.0 * 1024.0))
}

fn bar(ui: &mut egui::Ui, label: &str, v: u64, top: f32, colour: Color32) {
    ui.horizontal(|ui| {
        ui.add_sized([150.0, 16.0], egui::Label::new(label));
        ui.add(egui::ProgressBar::new(v as f32 / top).desired_width(ui.available_width()).fill(colour).text(mib(v)));
    });
}

/// Draws the bars of `runs` (label, history, colour; the policy run first, then the fp32 run):
/// held bytes of saved activations.
pub fn bars(ui: &mut egui::Ui, runs: &[(&str, &History, Color32)]) {
    let held: Vec<(String, u64, Color32)> =
        runs.iter().filter_map(|(name, h, c)| h.last().map(|s| (name.to_string(), memory_gauge(s).1, *c))).collect();
    if held.is_empty() {
        ui.label("no steps yet");
        return;
    }
    let top = held.iter().map(|v| v.1).max().unwrap_or(1).max(1) as f32;
    ui.label("saved activations held by the last step");
    for (name, v, c) in &held {
        bar(ui, name, *v, top, *c);
    }
    if let [(_, policy, _), (_, fp32, _)] = held[..] {
        let share = 100.0 * policy as f64 / fp32.max(1) as f64;
        ui.label(format!(
            "the policy run holds {share:.1}% of the fp32 run's bytes ({:.1}× less)",
            100.0 / share.max(1e-9)
        ));
    }
}

/// The pool's live and peak bytes by category.
pub fn pool(ui: &mut egui::Ui, m: &MemoryReport) {
    egui::Grid::new("pool").striped(true).show(ui, |ui| {
        ui.label("category");
        ui.label("live");
        ui.label("peak");
        ui.end_row();
        for c in CATEGORIES {
            ui.label(c.name());
            ui.label(mib(m.live_of(c)));
            ui.label(mib(m.peak_of(c)));
            ui.end_row();
        }
        ui.label("total peak");
        ui.label("");
        ui.label(mib(m.peak_total));
        ui.end_row();
    });
}
