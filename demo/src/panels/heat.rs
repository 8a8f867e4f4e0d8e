//! A small painter-drawn heatmap (rows × columns of values in 0..=1) with a time axis below it,
//! and its colour legend.

use egui::{Color32, Rect, Sense, Vec2};

/// A colour for `t` in 0..=1 (dark blue through teal to yellow).
pub fn colour(t: f32) -> Color32 {
    let t = t.clamp(0.0, 1.0);
    let r = (255.0 * (1.5 * t - 0.5).clamp(0.0, 1.0)) as u8;
    let g = (255.0 * (0.15 + 0.85 * t)) as u8;
    let b = (255.0 * (0.55 - 0.45 * t).clamp(0.0, 1.0)) as u8;
    Color32::from_rgb(r, g, b)
}

/// Width of the row labels.
pub const LABEL_W: f32 = 150.0;

/// Draws `cells[row][col]` (0..=1, `None` blank) with a label per row and the steps of the first
/// and last column (`axis`) below; hovering a cell shows `tip(row, col)`.
pub fn show(
    ui: &mut egui::Ui,
    labels: &[String],
    cells: &[Vec<Option<f32>>],
    cell: Vec2,
    axis: (&str, &str),
    tip: &dyn Fn(usize, usize) -> String,
) {
    let cols = cells.iter().map(Vec::len).max().unwrap_or(0);
    let label_w = LABEL_W;
    let size = Vec2::new(label_w + cols as f32 * cell.x, cells.len() as f32 * cell.y + 12.0);
    let (rect, resp) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter_at(rect);
    // Rows too thin for a label each are labelled in groups (empty labels between): a label
    // takes its group's height, top-aligned.
    let gap = label_gap(labels);
    let font = egui::FontId::monospace((cell.y * gap as f32).min(11.0));
    for (r, row) in cells.iter().enumerate() {
        let y = rect.top() + r as f32 * cell.y;
        if let Some(l) = labels.get(r).filter(|l| !l.is_empty()) {
            let (at, align) = if gap > 1 {
                (egui::pos2(rect.left(), y), egui::Align2::LEFT_TOP)
            } else {
                (egui::pos2(rect.left(), y + cell.y / 2.0), egui::Align2::LEFT_CENTER)
            };
            painter.text(at, align, l, font.clone(), ui.visuals().text_color());
        }
        for (c, v) in row.iter().enumerate() {
            if let Some(v) = v {
                let min = egui::pos2(rect.left() + label_w + c as f32 * cell.x, y);
                painter.rect_filled(Rect::from_min_size(min, cell), 0.0, colour(*v));
            }
        }
    }
    let (first, last) = axis;
    let font = egui::FontId::proportional(10.0);
    let y = rect.bottom() - 6.0;
    let right = rect.left() + label_w + cols as f32 * cell.x;
    painter.text(
        egui::pos2(rect.left(), y),
        egui::Align2::LEFT_CENTER,
        "steps",
        font.clone(),
        ui.visuals().weak_text_color(),
    );
    painter.text(
        egui::pos2(rect.left() + label_w, y),
        egui::Align2::LEFT_CENTER,
        first,
        font.clone(),
        ui.visuals().text_color(),
    );
    painter.text(egui::pos2(right, y), egui::Align2::RIGHT_CENTER, last, font, ui.visuals().text_color());
    if let Some(pos) = resp.hover_pos() {
        let (c, r) = (((pos.x - rect.left() - label_w) / cell.x).floor(), ((pos.y - rect.top()) / cell.y).floor());
        if c >= 0.0 && (r as usize) < cells.len() && (c as usize) < cols {
            resp.on_hover_text(tip(r as usize, c as usize));
        }
    }
}

/// The fewest rows from one non-empty label to the next (or to the end), at least 1.
pub fn label_gap(labels: &[String]) -> usize {
    let at: Vec<usize> = labels.iter().enumerate().filter(|(_, l)| !l.is_empty()).map(|(i, _)| i).collect();
    let ends = at.iter().skip(1).copied().chain(std::iter::once(labels.len()));
    at.iter().zip(ends).map(|(a, b)| b - a).min().unwrap_or(1).max(1)
}

/// A colour legend: the scale from 0 to 1 with `ticks` spread evenly under it.
pub fn legend(ui: &mut egui::Ui, title: &str, ticks: &[String]) {
    ui.horizontal(|ui| {
        ui.label(title);
        let (rect, _) = ui.allocate_exact_size(Vec2::new(160.0, 24.0), Sense::hover());
        let painter = ui.painter_at(rect);
        let bar = Rect::from_min_size(rect.min, Vec2::new(rect.width(), 10.0));
        let n = 32;
        for i in 0..n {
            let x0 = bar.left() + bar.width() * i as f32 / n as f32;
            let r = Rect::from_min_max(
                egui::pos2(x0, bar.top()),
                egui::pos2(x0 + bar.width() / n as f32 + 0.5, bar.bottom()),
            );
            painter.rect_filled(r, 0.0, colour(i as f32 / (n - 1) as f32));
        }
        let k = ticks.len().max(2) - 1;
        for (i, t) in ticks.iter().enumerate() {
            let x = bar.left() + bar.width() * i as f32 / k as f32;
            let align = if i == 0 {
                egui::Align2::LEFT_TOP
            } else if i == k {
                egui::Align2::RIGHT_TOP
            } else {
                egui::Align2::CENTER_TOP
            };
            painter.text(
                egui::pos2(x, bar.bottom() + 1.0),
                align,
                t,
                egui::FontId::proportional(10.0),
                ui.visuals().text_color(),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_labels_take_their_group_height() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(label_gap(&l(&["a", "b", "c"])), 1);
        assert_eq!(label_gap(&l(&["a", "", "", "", "b", "", "", ""])), 4);
        assert_eq!(label_gap(&l(&["a", "", "b"])), 1, "the last group is one row");
        assert_eq!(label_gap(&l(&["", ""])), 1);
        assert_eq!(label_gap(&[]), 1);
    }
}
