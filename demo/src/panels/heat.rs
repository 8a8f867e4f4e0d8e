//! A small painter-drawn heatmap (rows × columns of values in 0..=1) and a colour scale.

use egui::{Color32, Rect, Sense, Vec2};

/// A colour for `t` in 0..=1 (dark blue through teal to yellow).
pub fn colour(t: f32) -> Color32 {
    let t = t.clamp(0.0, 1.0);
    let r = (255.0 * (1.5 * t - 0.5).clamp(0.0, 1.0)) as u8;
    let g = (255.0 * (0.15 + 0.85 * t)) as u8;
    let b = (255.0 * (0.55 - 0.45 * t).clamp(0.0, 1.0)) as u8;
    Color32::from_rgb(r, g, b)
}

/// Draws `cells[row][col]` (0..=1, `None` blank) with a label per row; hovering a cell shows
/// `tip(row, col)`.
pub fn show(
    ui: &mut egui::Ui,
    labels: &[String],
    cells: &[Vec<Option<f32>>],
    cell: Vec2,
    tip: &dyn Fn(usize, usize) -> String,
) {
    let cols = cells.iter().map(Vec::len).max().unwrap_or(0);
    let label_w = 130.0;
    let size = Vec2::new(label_w + cols as f32 * cell.x, cells.len() as f32 * cell.y);
    let (rect, resp) = ui.allocate_exact_size(size, Sense::hover());
    let painter = ui.painter_at(rect);
    for (r, row) in cells.iter().enumerate() {
        let y = rect.top() + r as f32 * cell.y;
        if let Some(l) = labels.get(r) {
            painter.text(
                egui::pos2(rect.left(), y + cell.y / 2.0),
                egui::Align2::LEFT_CENTER,
                l,
                egui::FontId::monospace(cell.y.min(11.0)),
                ui.visuals().text_color(),
            );
        }
        for (c, v) in row.iter().enumerate() {
            if let Some(v) = v {
                let min = egui::pos2(rect.left() + label_w + c as f32 * cell.x, y);
                painter.rect_filled(Rect::from_min_size(min, cell), 0.0, colour(*v));
            }
        }
    }
    if let Some(pos) = resp.hover_pos() {
        let (c, r) = (((pos.x - rect.left() - label_w) / cell.x).floor(), ((pos.y - rect.top()) / cell.y).floor());
        if c >= 0.0 && (r as usize) < cells.len() && (c as usize) < cols {
            resp.on_hover_text(tip(r as usize, c as usize));
        }
    }
}
