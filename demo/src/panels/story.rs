//! The codec story of one live tile: a layer's output on test images (read from the GPU between
//! steps) coded with the bits per band that the last training step chose for the saved tensor
//! of that shape — or, when the budget slider differs from the run's budget, the bits the
//! allocation rule gives at the slider's budget (`crate::budget`) — told with the reference
//! codec (`crate::story`): input tile → DCT coefficients by band → bits → dequantized
//! coefficients → decoded tile → error, with bytes and squared error per band, and the same per
//! band for the whole tensor.

use egui::Color32;
use fdsr::engine::saved::TensorRecord;

use super::basis::{band_colour, band_name, tile};
use super::fmap;
use crate::activation::Activation;
use crate::budget::{bits_at, mask};
use crate::story::{tell, Input, Mask, Pick, TensorStory, TileStory};

/// What the panel shows: the layer and the tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// Top-level layer whose output is read.
    pub layer: usize,
    /// Image, channel and tile.
    pub pick: Pick,
}

/// The step's allocation the story uses.
pub struct Live<'a> {
    /// The last step's records.
    pub records: &'a [TensorRecord],
    /// The budget of the slider, and the run's own.
    pub budget: (f64, f64),
    /// The device's largest binding (for the step plan at another budget).
    pub max_binding: u64,
}

/// Tells the story of `act` under `live`'s allocation: the record it follows and both stories.
pub fn compute(act: &Activation, view: View, live: &Live<'_>) -> Told {
    let shape = act.shape;
    let record = live
        .records
        .iter()
        .find(|r| !r.bits.is_empty() && r.shape.len() == 4 && r.shape[1..] == shape[1..])
        .ok_or_else(|| {
        format!(
            "no stored tensor of shape _×{}×{}×{} has bits per band (fdsr policies only; a batch norm's \
             ReLU output, pooled or not, is recomputed, not stored)",
            shape[1], shape[2], shape[3]
        )
    })?;
    let edges = record.analysis.as_ref().map(|a| a.band_edges.clone()).ok_or("the record has no analysis")?;
    let (budget, run_budget) = live.budget;
    let bits = bits_at(record, live.records, budget, run_budget, live.max_binding)?;
    let mask = mask(record, &bits, act.data.iter().all(|&x| x >= 0.0));
    let input = Input { data: &act.data, shape, edges: &edges, bits: &bits.bits, mask };
    let (t, whole) = tell(&input, view.pick)?;
    let from = if bits.live {
        format!("bits {:?} the last step chose for {} (saved, same shape)", bits.bits, record.name)
    } else {
        format!("bits {:?} the rule gives {} at {budget:.2} bits/value", bits.bits, record.name)
    };
    Ok((from, mask, t, whole))
}

fn pickers(ui: &mut egui::Ui, view: &mut View, layers: usize, shape: Option<[usize; 4]>) -> bool {
    let mut changed = false;
    ui.horizontal_wrapped(|ui| {
        // Five pickers on one line of the column.
        ui.spacing_mut().item_spacing.x = 4.0;
        ui.label("layer");
        changed |= ui.add(egui::DragValue::new(&mut view.layer).range(0..=layers.saturating_sub(1))).changed();
        if let Some([n, c, h, w]) = shape {
            let p = &mut view.pick;
            for (label, v, max) in [
                ("image", &mut p.image, n),
                ("channel", &mut p.channel, c),
                ("tile row", &mut p.ty, h.div_ceil(8)),
                ("col", &mut p.tx, w.div_ceil(8)),
            ] {
                ui.label(label);
                ui.add(egui::DragValue::new(v).range(0..=max.saturating_sub(1)));
            }
        }
    });
    changed
}

fn pictures(ui: &mut egui::Ui, t: &TileStory) {
    let err: [f32; 64] = std::array::from_fn(|i| t.decoded[i] - t.input[i]);
    ui.horizontal_top(|ui| {
        for (label, v, signed, tint) in [
            ("input", &t.input, false, false),
            ("DCT by band", &t.coefs, true, true),
            ("dequantized", &t.dequant, true, true),
            ("decoded", &t.decoded, false, false),
            ("error", &err, true, false),
        ] {
            ui.vertical(|ui| {
                ui.small(label);
                tile(ui, v, 9.0, signed, tint);
            });
        }
    });
}

fn bands(ui: &mut egui::Ui, t: &TileStory, whole: &TensorStory) {
    let bytes: f64 = whole.stored_bytes.max(1.0);
    let err: f64 = whole.bands.iter().map(|b| b.sq_error).sum::<f64>().max(1e-30);
    egui::Grid::new("story-bands").striped(true).show(ui, |ui| {
        for h in ["band", "bits", "tile bytes", "tile sq. err", "tensor: bytes", "sq. error"] {
            ui.small(h);
        }
        ui.end_row();
        for (j, (b, w)) in t.bands.iter().zip(&whole.bands).enumerate() {
            ui.colored_label(band_colour(j), band_name(j));
            ui.label(format!("{} × {}", b.bits, b.coefs));
            ui.label(format!("{:.1}", b.bytes));
            ui.label(format!("{:.2e}", b.sq_error));
            ui.add(
                egui::ProgressBar::new((w.bytes / bytes) as f32).desired_width(90.0).text(format!("{:.0} B", w.bytes)),
            );
            ui.add(
                egui::ProgressBar::new((w.sq_error / err) as f32)
                    .desired_width(90.0)
                    .fill(Color32::from_rgb(200, 80, 80))
                    .text(format!("{:.0}%", 100.0 * w.sq_error / err)),
            );
            ui.end_row();
        }
    });
}

/// A told story: where the bits come from, what the store re-applied, the tile and the tensor.
pub type Told = Result<(String, Mask, TileStory, TensorStory), String>;

/// Draws the panel for `act` (the last read) and its story `told`; returns whether a new read
/// of the layer's output is asked for, and where the clickable feature map was drawn.
pub fn show(
    ui: &mut egui::Ui,
    view: &mut View,
    layers: usize,
    act: Option<&Result<Activation, String>>,
    told: Option<&Told>,
) -> (bool, Option<egui::Rect>) {
    let current = act.filter(|a| a.as_ref().map_or(true, |a| a.layer == view.layer));
    let shape = current.and_then(|a| a.as_ref().ok()).map(|a| a.shape);
    let changed = pickers(ui, view, layers, shape);
    let a = match current {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            ui.colored_label(Color32::LIGHT_RED, e);
            return (changed, None);
        }
        None => {
            ui.label("reading the layer's output…");
            return (true, None);
        }
    };
    view.pick = view.pick.clamped(a.shape);
    let map = ui
        .horizontal(|ui| {
            let (rect, _) = fmap::show(ui, a, &mut view.pick, 84.0);
            let [_, _, h, w] = a.shape;
            ui.vertical(|ui| {
                ui.small(format!("feature map: image {}, channel {} ({h}×{w})", view.pick.image, view.pick.channel));
                ui.small(format!("click a tile to follow it; tile ({}, {}) is outlined", view.pick.ty, view.pick.tx));
            });
            rect
        })
        .inner;
    match told {
        Some(Ok((from, mask, t, whole))) => {
            let [n, c, h, w] = a.shape;
            let mask = match mask {
                Mask::None => "",
                Mask::Zeros => ", zero mask",
                Mask::Clamp => ", zero mask, clamped at 0",
            };
            ui.small(format!("layer {} output on {n} test images ({c}×{h}×{w}), {from}{mask}", a.layer));
            pictures(ui, t);
            ui.small(format!("tile class {:?}; tile error Σ(x̂−x)² = {:.3e}", t.class, t.sq_error));
            bands(ui, t, whole);
            ui.add_space(2.0);
            ui.small(format!(
                "tensor: {:.0} of {:.0} bytes ({:.1}×; {:.0} B header, classes and DC scales); relative error {:.2e}",
                whole.stored_bytes,
                whole.fp32_bytes,
                whole.fp32_bytes / whole.stored_bytes.max(1.0),
                whole.meta_bytes,
                whole.sq_error / whole.energy.max(1e-30)
            ));
        }
        Some(Err(e)) => {
            ui.colored_label(Color32::LIGHT_RED, e);
        }
        None => {
            ui.label("telling the story…");
        }
    }
    (changed, Some(map))
}
