//! Memory gauge: what the last step's saved activations take as fp32 and as stored, the
//! pool's peak for saved activations, and live/peak bytes by category.

use fdsr::gpu::CATEGORIES;

use crate::history::{memory_gauge, History};

fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / (1024.0 * 1024.0))
}

/// Draws the gauge bars and the category table.
pub fn show(ui: &mut egui::Ui, h: &History) {
    let Some(last) = h.last() else {
        ui.label("no steps yet");
        return;
    };
    let (fp32, stored, peak) = memory_gauge(last);
    let top = fp32.max(stored).max(peak).max(1) as f32;
    for (label, v) in [("fp32", fp32), ("stored", stored), ("pool peak (saved)", peak)] {
        ui.horizontal(|ui| {
            ui.add_sized([120.0, 16.0], egui::Label::new(label));
            ui.add(egui::ProgressBar::new(v as f32 / top).desired_width(220.0).text(mib(v)));
        });
    }
    let ratio = last.saved.ratio();
    ui.label(format!("compression of saved activations: {ratio:.2}x (fp32 / stored, masks included)"));
    egui::Grid::new("pool").striped(true).show(ui, |ui| {
        ui.label("category");
        ui.label("live");
        ui.label("peak");
        ui.end_row();
        for c in CATEGORIES {
            ui.label(c.name());
            ui.label(mib(last.memory.live_of(c)));
            ui.label(mib(last.memory.peak_of(c)));
            ui.end_row();
        }
        ui.label("total peak");
        ui.label("");
        ui.label(mib(last.memory.peak_total));
        ui.end_row();
    });
}
