//! Block inspector: one layer's activation map on test images, read back from the GPU (the
//! model in evaluation), and for a chosen tile its input, 8×8 DCT coefficients coloured by band,
//! the tile after the codec (the pure-Rust reference codec on that plane, same policy) and the
//! error ×4.

use fdsr::reference::{self, dct};
use fdsr::{CodecOptions, Policy};

use super::basis::tile;
use crate::activation::Activation;

/// What the user picked.
#[derive(Default)]
pub struct Pick {
    /// Layer asked for.
    pub layer: usize,
    /// Image, channel and tile.
    pub image: usize,
    /// Channel.
    pub channel: usize,
    /// Tile row and column.
    pub tile: (usize, usize),
}

/// Tiles of one plane, coded by `policy` with the reference codec.
fn codec_tiles(
    plane: &[f32],
    h: usize,
    w: usize,
    pick: &Pick,
    policy: Option<&Policy>,
) -> Result<([f32; 64], [f32; 64]), String> {
    let input = dct::extract_tile(plane, h, w, pick.tile.0, pick.tile.1);
    let Some(policy) = policy else { return Ok((input, input)) };
    let c = reference::compress(plane, &[1, 1, h, w], policy, &CodecOptions::default()).map_err(|e| e.to_string())?;
    let back = reference::decompress(&c).map_err(|e| e.to_string())?;
    Ok((input, dct::extract_tile(&back, h, w, pick.tile.0, pick.tile.1)))
}

/// Draws the pickers and, for a read activation, the four tile views.
pub fn show(
    ui: &mut egui::Ui,
    pick: &mut Pick,
    layers: usize,
    act: Option<&Result<Activation, String>>,
    policy: Option<&Policy>,
) -> bool {
    let mut read = false;
    ui.horizontal(|ui| {
        ui.label("layer output");
        ui.add(egui::DragValue::new(&mut pick.layer).range(0..=layers.saturating_sub(1)));
        read = ui.button("read from GPU").clicked();
    });
    let a = match act {
        None => {
            ui.label("read a layer's output to inspect its tiles");
            return read;
        }
        Some(Err(e)) => {
            ui.colored_label(egui::Color32::LIGHT_RED, e);
            return read;
        }
        Some(Ok(a)) => a,
    };
    let [n, c, h, w] = a.shape;
    ui.horizontal(|ui| {
        ui.label(format!("layer {} output {n}×{c}×{h}×{w}; image", a.layer));
        ui.add(egui::DragValue::new(&mut pick.image).range(0..=n - 1));
        ui.label("channel");
        ui.add(egui::DragValue::new(&mut pick.channel).range(0..=c - 1));
        ui.label("tile row/col");
        ui.add(egui::DragValue::new(&mut pick.tile.0).range(0..=h.div_ceil(8) - 1));
        ui.add(egui::DragValue::new(&mut pick.tile.1).range(0..=w.div_ceil(8) - 1));
    });
    pick.image = pick.image.min(n - 1);
    pick.channel = pick.channel.min(c - 1);
    pick.tile = (pick.tile.0.min(h.div_ceil(8) - 1), pick.tile.1.min(w.div_ceil(8) - 1));
    let start = (pick.image * c + pick.channel) * h * w;
    let plane = &a.data[start..start + h * w];
    match codec_tiles(plane, h, w, pick, policy) {
        Ok((input, decoded)) => {
            let basis = dct::dct_basis();
            let coef = dct::forward(&input, &basis);
            let mut err = [0f32; 64];
            for i in 0..64 {
                err[i] = 4.0 * (decoded[i] - input[i]);
            }
            let scale = input.iter().fold(0f32, |m, v| m.max(v.abs()));
            ui.horizontal_top(|ui| {
                for (label, v, signed, tint) in [
                    ("input tile", &input, false, false),
                    ("DCT coefficients (band colour)", &coef, true, true),
                    ("after the codec", &decoded, false, false),
                    ("error ×4", &err, true, false),
                ] {
                    ui.vertical(|ui| {
                        ui.label(label);
                        tile(ui, v, 12.0, signed, tint);
                    });
                }
            });
            let rms = (input.iter().zip(&decoded).map(|(a, b)| (a - b).powi(2)).sum::<f32>() / 64.0).sqrt();
            ui.label(format!(
                "tile max {scale:.3}, RMS error {rms:.4}; codec: {}",
                policy.map_or("none (fp32, exact)".to_string(), |p| format!("{p:?}"))
            ));
        }
        Err(e) => {
            ui.colored_label(egui::Color32::LIGHT_RED, e);
        }
    }
    read
}
