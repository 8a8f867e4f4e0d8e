//! What the codec did per saved tensor: bits per band over time, band energy, tile classes and
//! the LSH reuse hit rate over time, from the store's per-tensor records.

use egui::Vec2;
use egui_plot::{Legend, Line, Plot, PlotPoints};

use super::basis::band_name;
use super::heat;
use crate::history::{hit_rate, History};

const CLASSES: [&str; 4] = ["zero", "DC-only", "full", "reference"];

/// Height of the bit-allocation heatmap's rows together (points).
const HEAT_H: f32 = 144.0;

/// Bit allocation per (tensor, band) over the steps whose records are kept.
pub fn bits(ui: &mut egui::Ui, h: &History) {
    let snaps: Vec<_> = h.with_records().collect();
    let Some(last) = snaps.last() else {
        ui.label("no steps yet");
        return;
    };
    let tensors: Vec<&str> = last.records.iter().filter(|r| !r.bits.is_empty()).map(|r| r.name.as_str()).collect();
    if tensors.is_empty() {
        ui.label(format!("no per-band bits: the policy stores {}", forms(h)));
        return;
    }
    let mut labels = Vec::new();
    let mut cells: Vec<Vec<Option<f32>>> = Vec::new();
    for name in &tensors {
        let bands = last.records.iter().find(|r| r.name == *name).map_or(0, |r| r.bits.len());
        for b in 0..bands {
            labels.push(format!("{name} {}", band_name(b)));
            cells.push(
                snaps
                    .iter()
                    .map(|s| {
                        let r = s.records.iter().find(|r| r.name == *name)?;
                        r.bits.get(b).map(|&v| f32::from(v.min(8)) / 8.0)
                    })
                    .collect(),
            );
        }
    }
    let width = (ui.available_width() - heat::LABEL_W - 4.0).max(50.0);
    // At most HEAT_H points high (16 rows of 9: `tiny`); taller models get thinner rows,
    // labelled once per tensor.
    let row_h = (HEAT_H / labels.len().max(1) as f32).clamp(2.0, 9.0);
    let cell = Vec2::new((width / snaps.len().max(1) as f32).clamp(1.0, 12.0), row_h);
    let shown: Vec<String> = if row_h < 9.0 {
        labels
            .iter()
            .map(|l| if l.ends_with(" DC") { l.trim_end_matches(" DC").to_string() } else { String::new() })
            .collect()
    } else {
        labels.clone()
    };
    let tip = |r: usize, c: usize| {
        let step = snaps.get(c).map_or(0, |s| s.step);
        let v = cells.get(r).and_then(|row| row.get(c)).copied().flatten();
        format!("{} at step {step}: {} bits", labels[r], v.map_or("-".into(), |v| format!("{}", (v * 8.0).round())))
    };
    heat::legend(ui, "bits per value", &["0", "2", "4", "6", "8"].map(String::from));
    let (first, last) = (snaps[0].step.to_string(), last.step.to_string());
    heat::show(ui, &shown, &cells, cell, (&first, &last), &tip);
}

fn forms(h: &History) -> String {
    let mut f: Vec<String> = h.last().map(|s| s.records.iter().map(|r| r.form.clone()).collect()).unwrap_or_default();
    f.sort();
    f.dedup();
    f.join(", ")
}

/// Share of AC energy per band and tensor in the last step (full tiles).
pub fn energy(ui: &mut egui::Ui, h: &History) {
    let Some(last) = h.last() else { return };
    let rows: Vec<_> = last.records.iter().filter(|r| r.band_energy.len() > 1).collect();
    if rows.is_empty() {
        ui.label("no band energy: fdsr policies record it");
        return;
    }
    heat::legend(ui, "share of AC energy", &["0%", "50%", "100%"].map(String::from));
    egui::Grid::new("energy").striped(true).show(ui, |ui| {
        ui.label("tensor");
        for b in 1..rows.iter().map(|r| r.band_energy.len()).max().unwrap_or(1) {
            ui.label(band_name(b));
        }
        ui.end_row();
        for r in rows {
            ui.label(&r.name);
            let ac: f64 = r.band_energy[1..].iter().sum();
            for e in &r.band_energy[1..] {
                let share = if ac > 0.0 { e / ac } else { 0.0 };
                let (rect, _) = ui.allocate_exact_size(Vec2::new(60.0, 14.0), egui::Sense::hover());
                ui.painter().rect_filled(rect, 0.0, heat::colour(share as f32));
                ui.painter().text(
                    rect.center(),
                    egui::Align2::CENTER_CENTER,
                    format!("{:.0}%", share * 100.0),
                    egui::FontId::monospace(10.0),
                    egui::Color32::BLACK,
                );
            }
            ui.end_row();
        }
    });
}

/// Tile classes of each tensor in the last step, and the reuse hit rate over time.
pub fn tiles(ui: &mut egui::Ui, h: &History) {
    let Some(last) = h.last() else { return };
    let rows: Vec<_> = last.records.iter().filter(|r| r.classes.iter().sum::<u64>() > 0).collect();
    if rows.is_empty() {
        ui.label("no tile classes: fdsr policies record them");
        return;
    }
    egui::Grid::new("classes").striped(true).show(ui, |ui| {
        ui.label("tensor");
        for c in CLASSES {
            ui.label(c);
        }
        ui.label("reuse hits");
        ui.end_row();
        for r in &rows {
            ui.label(&r.name);
            let total = r.classes.iter().sum::<u64>().max(1) as f64;
            for n in r.classes {
                ui.label(format!("{n} ({:.0}%)", 100.0 * n as f64 / total));
            }
            ui.label(hit_rate(r).map_or("off".into(), |v| format!("{:.1}%", v * 100.0)));
            ui.end_row();
        }
    });
    let names: Vec<String> = rows.iter().filter(|r| r.reuse_eligible > 0).map(|r| r.name.clone()).collect();
    if names.is_empty() {
        return;
    }
    ui.label("reuse hit rate per tensor over time");
    Plot::new("reuse").height(120.0).include_y(0.0).legend(Legend::default()).allow_scroll(false).show(ui, |p| {
        for name in names {
            let pts: Vec<[f64; 2]> = h
                .with_records()
                .filter_map(|s| {
                    let r = s.records.iter().find(|r| r.name == name)?;
                    Some([s.step as f64, hit_rate(r)?])
                })
                .collect();
            p.line(Line::new(name, PlotPoints::from(pts)));
        }
    });
}
