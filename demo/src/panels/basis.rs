//! DCT basis explorer for teaching: the 64 basis images of the 8×8 DCT in zig-zag bands, and
//! coefficient sliders whose inverse transform is drawn live. Also draws 8×8 tiles for the
//! codec story.

use egui::{Color32, Rect, Sense, Vec2};
use fdsr::reference::dct;
use fdsr::rules::config::DEFAULT_BAND_EDGES;

/// Band of zig-zag index `z` under the default edges (DC, low, mid, high, top).
pub fn band_of_zigzag(z: usize) -> usize {
    DEFAULT_BAND_EDGES.iter().filter(|&&e| usize::from(e) <= z).count() - 1
}

/// Names of the default bands; a band past them (custom edges) is named by its index.
pub fn band_name(j: usize) -> String {
    ["DC", "low", "mid", "high", "top"].get(j).map_or_else(|| format!("band {j}"), |s| s.to_string())
}

/// Colour of band `j` (bands past the default ones share the last colour).
pub fn band_colour(j: usize) -> Color32 {
    const COLOURS: [Color32; 5] = [
        Color32::from_rgb(230, 80, 80),
        Color32::from_rgb(240, 170, 60),
        Color32::from_rgb(90, 180, 90),
        Color32::from_rgb(80, 130, 230),
        Color32::from_rgb(160, 90, 220),
    ];
    COLOURS[j.min(COLOURS.len() - 1)]
}

/// Grey level of `v` on a scale `[-scale, scale]` (`signed`) or `[0, scale]`.
pub fn grey(v: f32, scale: f32, signed: bool) -> Color32 {
    let t = if signed { 0.5 + 0.5 * v / scale.max(1e-12) } else { v / scale.max(1e-12) };
    let g = (255.0 * t.clamp(0.0, 1.0)) as u8;
    Color32::from_gray(g)
}

/// Draws a raster 8×8 tile in grey of side `px` per value; with `tint`, each cell gets a
/// border in the colour of its band (for coefficients). Returns the response for clicks.
pub fn tile(ui: &mut egui::Ui, v: &[f32; 64], px: f32, signed: bool, tint: bool) -> egui::Response {
    let scale = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let (rect, resp) = ui.allocate_exact_size(Vec2::splat(8.0 * px), Sense::click());
    let painter = ui.painter_at(rect);
    let zz_of = zigzag_of_raster();
    for (i, &x) in v.iter().enumerate() {
        let r = Rect::from_min_size(rect.min + Vec2::new((i % 8) as f32 * px, (i / 8) as f32 * px), Vec2::splat(px));
        painter.rect_filled(r, 0.0, grey(x, scale, signed));
        if tint {
            let c = band_colour(band_of_zigzag(zz_of[i]));
            painter.rect_stroke(r.shrink(1.0), 0.0, egui::Stroke::new(2.0, c), egui::StrokeKind::Inside);
        }
    }
    resp
}

/// `out[raster] = zig-zag index`.
pub fn zigzag_of_raster() -> [usize; 64] {
    let mut out = [0; 64];
    for (z, &r) in dct::ZIGZAG.iter().enumerate() {
        out[r as usize] = z;
    }
    out
}

/// Explorer state: coefficients in raster order.
pub struct Explorer {
    /// Coefficients (raster order).
    pub coef: [f32; 64],
    basis: [f32; 64],
}

impl Default for Explorer {
    fn default() -> Self {
        let mut coef = [0f32; 64];
        coef[0] = 4.0;
        coef[1] = 2.0;
        Explorer { coef, basis: dct::dct_basis() }
    }
}

impl Explorer {
    /// The image of the unit coefficient at raster position `i`.
    pub fn basis_image(&self, i: usize) -> [f32; 64] {
        let mut c = [0f32; 64];
        c[i] = 1.0;
        dct::inverse(&c, &self.basis)
    }

    /// The inverse transform of the coefficients.
    pub fn image(&self) -> [f32; 64] {
        dct::inverse(&self.coef, &self.basis)
    }

    /// Draws the basis grid (click adds 1 to that coefficient), the sliders and the image.
    pub fn show(&mut self, ui: &mut egui::Ui) {
        ui.label("The 64 DCT basis images (border: DC, low, mid, high, top band). Click one to add it.");
        ui.horizontal_top(|ui| {
            egui::Grid::new("basis").spacing([3.0, 3.0]).show(ui, |ui| {
                let zz = zigzag_of_raster();
                for (i, &z) in zz.iter().enumerate() {
                    let img = self.basis_image(i);
                    let resp = tile(ui, &img, 4.0, true, false);
                    let (rect, b) = (resp.rect, band_of_zigzag(z));
                    ui.painter().rect_stroke(
                        rect,
                        0.0,
                        egui::Stroke::new(1.5, band_colour(b)),
                        egui::StrokeKind::Outside,
                    );
                    if resp.on_hover_text(format!("frequency ({}, {}), zig-zag {}", i / 8, i % 8, zz[i])).clicked() {
                        self.coef[i] += 1.0;
                    }
                    if i % 8 == 7 {
                        ui.end_row();
                    }
                }
            });
            ui.vertical(|ui| {
                ui.label("image = Σ coefficient × basis");
                tile(ui, &self.image(), 14.0, true, false);
                if ui.button("clear").clicked() {
                    self.coef = [0.0; 64];
                }
            });
        });
        ui.collapsing("coefficient sliders (raster order, row = vertical frequency)", |ui| {
            egui::Grid::new("coef").spacing([2.0, 2.0]).show(ui, |ui| {
                for i in 0..64 {
                    ui.add(egui::DragValue::new(&mut self.coef[i]).speed(0.05).range(-8.0..=8.0).max_decimals(2));
                    if i % 8 == 7 {
                        ui.end_row();
                    }
                }
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_images_rebuild_the_image() {
        let e = Explorer::default();
        let img = e.image();
        let mut sum = [0f32; 64];
        for i in 0..64 {
            let b = e.basis_image(i);
            for p in 0..64 {
                sum[p] += e.coef[i] * b[p];
            }
        }
        for p in 0..64 {
            assert!((img[p] - sum[p]).abs() < 1e-5, "{p}: {} vs {}", img[p], sum[p]);
        }
        assert!(img.iter().any(|v| v.abs() > 0.1));
    }

    #[test]
    fn bands_follow_the_default_edges() {
        let counts = (0..64).fold([0; 5], |mut c, z| {
            c[band_of_zigzag(z)] += 1;
            c
        });
        assert_eq!(counts, [1, 5, 22, 17, 19]);
    }
}
