//! The feature map of the codec story: one channel of one image of the read layer output,
//! drawn whole with its 8×8 tile grid and the picked tile outlined; a click on the map picks
//! the tile under the cursor (the CNN Explainer way: click a part, see its computation).

use egui::{Color32, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};

use super::basis::grey;
use crate::activation::Activation;
use crate::story::Pick;

/// Side of a tile in values.
const TILE: usize = 8;

/// Points per value for an `h`×`w` plane drawn at most `max_side` points on its longer side
/// (between 1 and 12 points per value).
pub fn cell_size(h: usize, w: usize, max_side: f32) -> f32 {
    let side = h.max(w).max(1) as f32;
    if max_side.is_finite() {
        (max_side / side).clamp(1.0, 12.0)
    } else {
        1.0
    }
}

/// The tile (row, column) under `offset` (points from the map's top-left corner) of an
/// `h`×`w` plane drawn with `cell` points per value; `None` outside the plane or for a bad
/// cell size.
pub fn tile_at(offset: Vec2, cell: f32, h: usize, w: usize) -> Option<(usize, usize)> {
    // NaN offsets fail the comparisons and are no tile.
    let inside = cell.is_finite() && cell > 0.0 && offset.x >= 0.0 && offset.y >= 0.0;
    if !inside {
        return None;
    }
    let (x, y) = ((offset.x / cell).floor(), (offset.y / cell).floor());
    if !(x.is_finite() && y.is_finite()) || x >= w as f32 || y >= h as f32 {
        return None;
    }
    Some((y as usize / TILE, x as usize / TILE))
}

/// The values of `pick`'s image and channel in `act` (empty when the pick is outside it).
fn plane(act: &Activation, pick: Pick) -> &[f32] {
    let [_, c, h, w] = act.shape;
    let start = (pick.image * c + pick.channel) * h * w;
    act.data.get(start..start + h * w).unwrap_or(&[])
}

/// Draws the map of `pick`'s image and channel at most `max_side` points on a side and moves
/// `pick` to a clicked tile. Returns the map's rectangle (for tests that click on it) and
/// whether the pick changed.
pub fn show(ui: &mut egui::Ui, act: &Activation, pick: &mut Pick, max_side: f32) -> (Rect, bool) {
    let [_, _, h, w] = act.shape;
    let cell = cell_size(h, w, max_side);
    let (rect, resp) = ui.allocate_exact_size(Vec2::new(w as f32 * cell, h as f32 * cell), Sense::click());
    let values = plane(act, *pick);
    let painter = ui.painter_at(rect);
    let scale = values.iter().fold(0f32, |m, x| m.max(x.abs()));
    let signed = values.iter().any(|&x| x < 0.0);
    for (i, &v) in values.iter().enumerate() {
        let min = rect.min + Vec2::new((i % w) as f32 * cell, (i / w) as f32 * cell);
        painter.rect_filled(Rect::from_min_size(min, Vec2::splat(cell)), 0.0, grey(v, scale, signed));
    }
    let grid = Stroke::new(1.0, Color32::from_rgba_unmultiplied(90, 160, 240, 110));
    for k in (TILE..w).step_by(TILE) {
        let x = rect.min.x + k as f32 * cell;
        painter.line_segment([Pos2::new(x, rect.min.y), Pos2::new(x, rect.max.y)], grid);
    }
    for k in (TILE..h).step_by(TILE) {
        let y = rect.min.y + k as f32 * cell;
        painter.line_segment([Pos2::new(rect.min.x, y), Pos2::new(rect.max.x, y)], grid);
    }
    let side = TILE as f32 * cell;
    let picked =
        Rect::from_min_size(rect.min + Vec2::new(pick.tx as f32 * side, pick.ty as f32 * side), Vec2::splat(side));
    painter.rect_stroke(picked.intersect(rect), 0.0, Stroke::new(2.0, Color32::YELLOW), StrokeKind::Inside);
    let mut changed = false;
    if resp.clicked() {
        let hit = resp.interact_pointer_pos().and_then(|p| tile_at(p - rect.min, cell, h, w));
        if let Some((ty, tx)) = hit {
            changed = (ty, tx) != (pick.ty, pick.tx);
            (pick.ty, pick.tx) = (ty, tx);
        }
    }
    (rect, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixels_map_to_the_tile_under_them() {
        // A 16×16 plane at 6 points per value: tiles of 48 points.
        assert_eq!(tile_at(Vec2::new(0.0, 0.0), 6.0, 16, 16), Some((0, 0)));
        assert_eq!(tile_at(Vec2::new(47.9, 47.9), 6.0, 16, 16), Some((0, 0)));
        assert_eq!(tile_at(Vec2::new(48.0, 0.0), 6.0, 16, 16), Some((0, 1)));
        assert_eq!(tile_at(Vec2::new(10.0, 50.0), 6.0, 16, 16), Some((1, 0)));
        assert_eq!(tile_at(Vec2::new(95.9, 95.9), 6.0, 16, 16), Some((1, 1)));
        // A wide plane with a partial last tile (20 columns: tiles 0, 1, 2).
        assert_eq!(tile_at(Vec2::new(19.5 * 3.0, 1.0), 3.0, 8, 20), Some((0, 2)));
    }

    #[test]
    fn outside_the_plane_or_a_bad_cell_is_no_tile() {
        assert_eq!(tile_at(Vec2::new(96.0, 10.0), 6.0, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(10.0, 96.0), 6.0, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(-0.5, 10.0), 6.0, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(f32::NAN, 10.0), 6.0, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(1.0, 1.0), 0.0, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(1.0, 1.0), f32::INFINITY, 16, 16), None);
        assert_eq!(tile_at(Vec2::new(1.0, 1.0), 6.0, 0, 0), None);
    }

    #[test]
    fn the_map_fits_its_side_within_the_cell_limits() {
        assert_eq!(cell_size(16, 16, 96.0), 6.0);
        assert_eq!(cell_size(32, 16, 96.0), 3.0);
        assert_eq!(cell_size(4, 4, 96.0), 12.0, "small maps stop at 12 points per value");
        assert_eq!(cell_size(512, 512, 96.0), 1.0, "large maps at 1");
        assert_eq!(cell_size(0, 0, f32::NAN), 1.0);
    }

    #[test]
    fn the_plane_is_the_picked_image_and_channel() {
        let act = Activation { layer: 0, shape: [2, 3, 2, 2], data: (0..24).map(|v| v as f32).collect() };
        assert_eq!(plane(&act, Pick { image: 1, channel: 2, ty: 0, tx: 0 }), &[20.0, 21.0, 22.0, 23.0]);
        assert_eq!(plane(&act, Pick { image: 0, channel: 1, ty: 0, tx: 0 }), &[4.0, 5.0, 6.0, 7.0]);
        assert!(plane(&act, Pick { image: 2, channel: 0, ty: 0, tx: 0 }).is_empty());
    }
}
