//! Loss and accuracy curves of the training steps (egui_plot).

use egui_plot::{Line, Plot, PlotPoints};

use crate::history::History;

/// Draws the two curves side by side.
pub fn show(ui: &mut egui::Ui, h: &History) {
    ui.columns(2, |cols| {
        cols[0].label("training loss");
        Plot::new("loss").height(160.0).allow_scroll(false).show(&mut cols[0], |p| {
            p.line(Line::new("loss", PlotPoints::from(h.loss())));
        });
        cols[1].label("training accuracy");
        Plot::new("accuracy").height(160.0).include_y(0.0).include_y(1.0).allow_scroll(false).show(&mut cols[1], |p| {
            p.line(Line::new("accuracy", PlotPoints::from(h.accuracy())));
        });
    });
}
