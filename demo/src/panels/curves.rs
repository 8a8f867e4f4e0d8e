//! Loss and accuracy curves of the two runs overlaid (egui_plot): the run with the chosen
//! policy and the same run with fp32 activations, each an EMA trend over its raw steps (faint).

use egui::Color32;
use egui_plot::{AxisHints, Legend, Line, Plot, PlotPoints};

use crate::history::{ema, History};

/// Weight of each new step in the trend lines.
pub const EMA_ALPHA: f64 = 0.1;
/// Colour of the run with the chosen policy.
pub const POLICY_COLOUR: Color32 = Color32::from_rgb(240, 150, 40);
/// Colour of the fp32 run.
pub const FP32_COLOUR: Color32 = Color32::from_rgb(90, 160, 240);

fn lines(p: &mut egui_plot::PlotUi<'_>, name: &str, raw: Vec<[f64; 2]>, colour: Color32) {
    let trend = ema(&raw, EMA_ALPHA);
    // The same name: one legend entry for the trend and its raw steps.
    p.line(Line::new(name.to_string(), PlotPoints::from(raw)).color(colour.gamma_multiply(0.3)));
    p.line(Line::new(name.to_string(), PlotPoints::from(trend)).color(colour).width(2.0));
}

/// A y axis whose tick labels show from 12 points apart (the default hides them below 20, which
/// on a short plot leaves only the 0).
pub fn y_axis(label: &str) -> AxisHints<'static> {
    AxisHints::new_y().label(label.to_string()).label_spacing(12.0..=16.0)
}

/// Draws loss above accuracy for `runs` (label, history, colour), `height` each.
pub fn show(ui: &mut egui::Ui, runs: &[(&str, &History, Color32)], height: f32) {
    Plot::new("loss")
        .height(height)
        .x_axis_label("step")
        .y_axis_label("training loss")
        .include_y(0.0)
        .legend(Legend::default())
        .allow_scroll(false)
        .show(ui, |p| {
            for (name, h, c) in runs {
                lines(p, name, h.loss(), *c);
            }
        });
    Plot::new("accuracy")
        .height(height)
        .x_axis_label("step")
        .y_axis_label("training accuracy")
        .include_y(0.0)
        .include_y(1.0)
        .allow_scroll(false)
        .show(ui, |p| {
            for (name, h, c) in runs {
                lines(p, name, h.accuracy(), *c);
            }
        });
}
