//! The ratio–accuracy frontier of the shipped sweep (`crate::frontier`): test accuracy against
//! the compression ratio of saved activations (log scale), a line per policy family, with the live run's
//! point (its compression ratio and its accuracy on held-out test images) on it.

use egui::Color32;
use egui_plot::{Corner, Legend, Line, MarkerShape, Plot, PlotPoints, Points};

use super::curves::{y_axis, POLICY_COLOUR};
use crate::frontier::Sweep;

const FAMILY_COLOURS: [Color32; 4] = [
    Color32::from_rgb(90, 160, 240),
    Color32::from_rgb(120, 200, 120),
    Color32::from_rgb(200, 120, 220),
    Color32::from_rgb(240, 200, 80),
];

/// The live run's point: its last step's compression ratio and its last evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Live {
    /// fp32 bytes of the saved activations over the bytes held for them.
    pub ratio: f64,
    /// Test accuracy on the held-out images.
    pub accuracy: f64,
    /// Steps taken when it was evaluated.
    pub step: u64,
    /// Held-out images evaluated.
    pub images: u64,
}

/// Draws `sweep` and the live point, `height` high.
pub fn show(ui: &mut egui::Ui, sweep: &Result<Sweep, String>, live: Option<Live>, height: f32) {
    let s = match sweep {
        Ok(s) => s,
        Err(e) => {
            ui.colored_label(Color32::LIGHT_RED, e);
            return;
        }
    };
    ui.small(format!(
        "fdsr sweep: {}, {} epochs on {} images, {} seed(s), {}; test accuracy of each run",
        s.model, s.epochs, s.train_images, s.seeds, s.adapter
    ));
    Plot::new("frontier")
        .height(height)
        .x_axis_label("compression of saved activations (fp32 bytes / held bytes)")
        .x_axis_formatter(|mark, _| format!("{}x", 2f64.powf(mark.value)))
        .custom_y_axes(vec![y_axis("test accuracy")])
        .legend(Legend::default().position(Corner::LeftBottom))
        .allow_scroll(false)
        .show(ui, |p| {
            for (i, (family, pts)) in s.families().into_iter().enumerate() {
                let xy: Vec<[f64; 2]> = pts.iter().map(|q| [q.ratio.log2(), q.accuracy]).collect();
                let c = FAMILY_COLOURS[i % FAMILY_COLOURS.len()];
                p.line(Line::new(family.to_string(), PlotPoints::from(xy.clone())).color(c));
                p.points(Points::new(family.to_string(), PlotPoints::from(xy)).color(c).radius(3.0));
            }
            if let Some(l) = live {
                let name = format!("live run: test accuracy, {} held-out images, step {}", l.images, l.step);
                let pt = Points::new(name, PlotPoints::from(vec![[l.ratio.max(1e-3).log2(), l.accuracy]]))
                    .shape(MarkerShape::Diamond)
                    .radius(6.0)
                    .color(POLICY_COLOUR);
                p.points(pt);
            }
        });
}
