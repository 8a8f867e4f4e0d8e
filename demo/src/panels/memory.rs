//! Memory bars of the two runs next to each other: what the last step's saved activations take
//! in the fp32 run and, stored, in the run with the chosen policy, on one scale; the largest
//! batch each would fit under a chosen cap (`crate::fit`); the device pool's live and peak
//! bytes by category (the two runs share one device).

use egui::Color32;
use fdsr::gpu::{MemoryReport, CATEGORIES};

use crate::fit::{cap_bytes, Estimate, Fit};
use crate::history::{memory_gauge, History};
use crate::settings::CAP_RANGE;

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

/// The estimates of the policy run and of the fp32 run from their last steps at `batch`
/// images, with `fixed` bytes that do not grow with the batch. The fp32 run's falls back to
/// the policy run's fp32-equivalent bytes before its first step.
pub fn estimates(policy: &History, fp32: &History, batch: usize, fixed: u64) -> [Option<Estimate>; 2] {
    let held = |h: &History, dense: bool| {
        h.last().map(|s| {
            let (fp32, held, _) = memory_gauge(s);
            if dense {
                fp32
            } else {
                held
            }
        })
    };
    let p = held(policy, false);
    let f = held(fp32, false).or_else(|| held(policy, true));
    [p, f].map(|b| b.and_then(|b| Estimate::measured(b, batch, fixed)))
}

/// The cap (a slider, MiB) and the largest batch of each of `rows` (label, estimate, colour)
/// under it; returns the fits, in `rows`' order.
pub fn fit(ui: &mut egui::Ui, cap_mib: &mut f32, rows: &[(&str, Option<Estimate>, Color32)]) -> Vec<Fit> {
    ui.horizontal(|ui| {
        ui.label("memory cap");
        ui.add(egui::Slider::new(cap_mib, CAP_RANGE).logarithmic(true).suffix(" MiB"));
    });
    let cap = cap_bytes(*cap_mib);
    let mut out = Vec::new();
    for (name, e, c) in rows {
        let Some(e) = e else { continue };
        let f = e.largest_batch(cap);
        out.push(f);
        ui.horizontal(|ui| {
            ui.add_sized([150.0, 14.0], egui::Label::new(egui::RichText::new(*name).color(*c)));
            ui.label(format!("{} ({:.1} KiB per image)", f.describe(), e.per_image / 1024.0));
        });
    }
    if let Some(Some(e)) = rows.first().map(|r| r.1) {
        ui.small(format!(
            "estimate: measured bytes held per image × batch + {} fixed (weights, gradients, momentum);              kernel workspace not counted",
            mib(e.fixed)
        ));
    }
    out
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
