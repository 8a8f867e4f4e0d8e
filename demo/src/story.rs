//! The codec story, computed on the host with the reference codec (`fdsr::reference::fdsr`): a
//! 4-D activation analysed (block DCT, tile classes), encoded with given bits per band, decoded,
//! and — for a mask-aware policy on a tensor ≥ 0 — its zero mask re-applied with a clamp at 0,
//! as the training store does. What it costs and what error it adds is counted per band, for
//! one picked tile and for the whole tensor.
//!
//! Per-band errors are measured in the coefficient domain (orthonormal DCT: the squared errors
//! of the bands add up to the tile's pixel error before the mask): the dequantized coefficients
//! are the forward DCT of the decoded tile, exact where planes are whole tiles (every 4-D
//! activation of `tiny` and `cnn`).

use fdsr::codec::alloc::{ac_band_bits, stored_bytes};
use fdsr::reference::{dct, fdsr as reference};
use fdsr::{CodecOptions, Rounding, TileClass};

/// Bytes, energy and error of one band.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BandCost {
    /// Coefficients per tile in the band.
    pub coefs: usize,
    /// Bits per coefficient.
    pub bits: u8,
    /// Payload bytes (codes and the band's scale code per full tile).
    pub bytes: f64,
    /// `Σ c²` of the band's exact coefficients.
    pub energy: f64,
    /// `Σ (c − ĉ)²`: the squared error the band's quantization (or dropping) adds.
    pub sq_error: f64,
}

/// One 8×8 tile through the codec (raster order everywhere).
#[derive(Clone, Debug)]
pub struct TileStory {
    /// The activation's values.
    pub input: [f32; 64],
    /// Its DCT coefficients.
    pub coefs: [f32; 64],
    /// The coefficients after quantization and dequantization.
    pub dequant: [f32; 64],
    /// The tile after decoding (and the mask, where applied).
    pub decoded: [f32; 64],
    /// The tile's class.
    pub class: TileClass,
    /// Per band.
    pub bands: Vec<BandCost>,
    /// `Σ (decoded − input)²`.
    pub sq_error: f64,
}

/// The whole tensor through the codec.
#[derive(Clone, Debug)]
pub struct TensorStory {
    /// Per band, summed over tiles.
    pub bands: Vec<BandCost>,
    /// Bytes of everything else: header, tile classes (2 bits each), DC scale codes.
    pub meta_bytes: f64,
    /// The stored size (payload and metadata), as the format counts it.
    pub stored_bytes: f64,
    /// The tensor as f32.
    pub fp32_bytes: f64,
    /// Tiles of class zero, DC-only, full.
    pub classes: [u64; 3],
    /// `Σ x²`.
    pub energy: f64,
    /// `Σ (decoded − x)²` after the mask, if any.
    pub sq_error: f64,
}

/// What to tell the story of.
pub struct Input<'a> {
    /// Values of `[N, C, H, W]`.
    pub data: &'a [f32],
    /// Shape.
    pub shape: [usize; 4],
    /// Zig-zag band edges.
    pub edges: &'a [u8],
    /// Bits per band.
    pub bits: &'a [u8],
    /// What the store re-applies after decoding.
    pub mask: Mask,
}

/// What the store re-applies to a decoded tensor (the policy's `,mask` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Nothing: the decoded values as they are.
    None,
    /// The exact zeros (`,mask`, `,mask=zeros`).
    Zeros,
    /// The exact zeros and a clamp of the other values at 0 (`,mask=clamp`).
    Clamp,
}

/// Image, channel and tile (row, column) of the picked tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pick {
    /// Image.
    pub image: usize,
    /// Channel.
    pub channel: usize,
    /// Tile row.
    pub ty: usize,
    /// Tile column.
    pub tx: usize,
}

impl Pick {
    /// The pick moved inside `shape`'s planes and tiles.
    pub fn clamped(self, [n, c, h, w]: [usize; 4]) -> Pick {
        Pick {
            image: self.image.min(n.saturating_sub(1)),
            channel: self.channel.min(c.saturating_sub(1)),
            ty: self.ty.min(dct::tiles_along(h).saturating_sub(1)),
            tx: self.tx.min(dct::tiles_along(w).saturating_sub(1)),
        }
    }
}

/// Payload bits of band `j` in a tile of `class` with `bits` (scale code included).
fn band_bits(class: TileClass, j: usize, n: usize, b: u8) -> u64 {
    match (class, j) {
        (TileClass::DcOnly | TileClass::Full, 0) => u64::from(b),
        (TileClass::Full, _) => u64::from(ac_band_bits(n as u32, b)),
        _ => 0,
    }
}

/// Adds tile `zz`'s band costs (exact `zz`, dequantized `dz`, zig-zag order) to `out`.
fn add_bands(out: &mut [BandCost], edges: &[u8], bits: &[u8], class: TileClass, zz: &[f32; 64], dz: &[f32; 64]) {
    for (j, band) in out.iter_mut().enumerate() {
        let (lo, hi) = (edges[j] as usize, edges[j + 1] as usize);
        band.coefs = hi - lo;
        band.bits = bits[j];
        band.bytes += band_bits(class, j, hi - lo, bits[j]) as f64 / 8.0;
        for z in lo..hi {
            band.energy += f64::from(zz[z]).powi(2);
            band.sq_error += f64::from(zz[z] - dz[z]).powi(2);
        }
    }
}

/// The story of `input` and of its tile `pick`; an error names what does not fit (shape,
/// bits, values the codec refuses).
pub fn tell(input: &Input<'_>, pick: Pick) -> Result<(TileStory, TensorStory), String> {
    let [n, c, h, w] = input.shape;
    if input.data.len() != n * c * h * w {
        return Err(format!("{} values for the shape {:?}", input.data.len(), input.shape));
    }
    if input.bits.len() + 1 != input.edges.len() {
        return Err(format!("{} bit-widths for {} bands", input.bits.len(), input.edges.len().saturating_sub(1)));
    }
    let shape = input.shape.to_vec();
    let a = reference::analyze(input.data, &shape, input.edges, fdsr::rules::config::DEFAULT_DC_THRESHOLD)
        .map_err(|e| e.to_string())?;
    let opts = CodecOptions { seed: 0, tensor_id: 0, rounding: Rounding::Stochastic };
    let body = reference::encode(&a, input.bits, &opts);
    let raw = reference::decode(&body, &shape).map_err(|e| e.to_string())?;
    let decoded: Vec<f32> = match input.mask {
        Mask::None => raw.clone(),
        mask => {
            let kept = |d: f32| if mask == Mask::Clamp { d.max(0.0) } else { d };
            raw.iter().zip(input.data).map(|(&d, &x)| if x == 0.0 { 0.0 } else { kept(d) }).collect()
        }
    };
    let basis = dct::dct_basis();
    let g = a.geometry;
    let nb = input.bits.len();
    let mut whole = vec![BandCost::default(); nb];
    let mut classes = [0u64; 3];
    let pick = pick.clamped(input.shape);
    let picked_tile = ((pick.image * c + pick.channel) * g.tiles_y + pick.ty) * g.tiles_x + pick.tx;
    let mut tile = None;
    for (t, (&class, zz)) in a.classes.iter().zip(&a.coefs).enumerate() {
        classes[(class as usize).min(2)] += 1;
        let p = t / g.tiles_per_plane();
        let (ty, tx) = ((t % g.tiles_per_plane()) / g.tiles_x, t % g.tiles_x);
        let plane = &raw[p * h * w..(p + 1) * h * w];
        let dz = dct::to_zigzag(&dct::forward(&dct::extract_tile(plane, h, w, ty, tx), &basis));
        add_bands(&mut whole, input.edges, input.bits, class, zz, &dz);
        if t == picked_tile {
            let mut bands = vec![BandCost::default(); nb];
            add_bands(&mut bands, input.edges, input.bits, class, zz, &dz);
            let x = dct::extract_tile(&input.data[p * h * w..(p + 1) * h * w], h, w, ty, tx);
            let y = dct::extract_tile(&decoded[p * h * w..(p + 1) * h * w], h, w, ty, tx);
            let sq_error = x.iter().zip(&y).map(|(a, b)| f64::from(a - b).powi(2)).sum();
            let (coefs, dequant) = (dct::from_zigzag(zz), dct::from_zigzag(&dz));
            tile = Some(TileStory { input: x, coefs, dequant, decoded: y, class, bands, sq_error });
        }
    }
    let tile = tile.ok_or_else(|| format!("tile {pick:?} is outside {:?}", input.shape))?;
    let stored = stored_bytes(&a.stats, input.bits) as f64;
    let payload: f64 = whole.iter().map(|b| b.bytes).sum();
    let tensor = TensorStory {
        meta_bytes: stored - payload,
        stored_bytes: stored,
        fp32_bytes: (input.data.len() * 4) as f64,
        classes,
        energy: input.data.iter().map(|&x| f64::from(x).powi(2)).sum(),
        sq_error: input.data.iter().zip(&decoded).map(|(a, b)| f64::from(a - b).powi(2)).sum(),
        bands: whole,
    };
    Ok((tile, tensor))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDGES: [u8; 5] = [0, 1, 6, 28, 64];

    /// A smooth, partly zero, non-negative activation of 2 images × 3 channels × 16 × 16.
    fn activation() -> ([usize; 4], Vec<f32>) {
        let shape = [2, 3, 16, 16];
        let data = (0..2 * 3 * 256)
            .map(|i| {
                let (p, y, x) = (i / 256, (i / 16) % 16, i % 16);
                let v = ((x as f32 * 0.4 + p as f32).sin() + (y as f32 * 0.3).cos()) * (1.0 + p as f32 * 0.1);
                // Tile (0, 0) of every plane is zero, tile (0, 1) a third zero.
                if y < 8 && (x < 8 || x % 3 == 0) {
                    0.0
                } else {
                    v.max(0.0)
                }
            })
            .collect();
        (shape, data)
    }

    #[test]
    fn band_errors_add_up_to_the_tile_error_and_bytes_to_the_stored_size() {
        let (shape, data) = activation();
        let bits = [8, 4, 2, 0];
        let input = Input { data: &data, shape, edges: &EDGES, bits: &bits, mask: Mask::None };
        let pick = Pick { image: 1, channel: 2, ty: 1, tx: 1 };
        let (tile, tensor) = tell(&input, pick).unwrap();
        assert_eq!(tile.class, TileClass::Full);
        let band_sum: f64 = tile.bands.iter().map(|b| b.sq_error).sum();
        assert!((band_sum - tile.sq_error).abs() <= 1e-4 * tile.sq_error.max(1e-6), "{band_sum} vs {}", tile.sq_error);
        // The dropped high band's error is its whole energy; the DC at 8 bits costs least.
        let high = &tile.bands[3];
        assert!(high.energy > 0.0 && (high.sq_error - high.energy).abs() < 1e-6 * high.energy.max(1.0));
        assert_eq!(tile.bands.iter().map(|b| b.bytes).sum::<f64>(), (8 + 5 + 5 * 4 + 5 + 22 * 2) as f64 / 8.0);
        // The bytes per band add up to the codec's own: the payload of the encoded body (in whole
        // words) and the stored size of the reference codec's output at these bits.
        let payload: f64 = tensor.bands.iter().map(|b| b.bytes).sum();
        let opts = CodecOptions { seed: 0, tensor_id: 0, rounding: Rounding::Stochastic };
        let a = reference::analyze(&data, &shape, &EDGES, fdsr::rules::config::DEFAULT_DC_THRESHOLD).unwrap();
        let body = reference::encode(&a, &bits, &opts);
        assert_eq!(body.payload.len(), (payload as usize).div_ceil(4), "{payload} payload bytes");
        let policy: fdsr::Policy = "fdsr:bits=8,4,2,0".parse().unwrap();
        let stored = fdsr::reference::compress(&data, &shape, &policy, &opts).unwrap().stored_bytes();
        assert_eq!(tensor.stored_bytes, stored as f64);
        assert!(tensor.meta_bytes > 0.0 && (payload + tensor.meta_bytes - tensor.stored_bytes).abs() < 1e-9);
        assert!(tensor.stored_bytes < tensor.fp32_bytes / 4.0, "{tensor:?}");
        assert_eq!(tensor.classes.iter().sum::<u64>(), 2 * 3 * 4);
        assert!(tensor.classes[0] >= 2 * 3, "the zero tile of each plane: {:?}", tensor.classes);
    }

    #[test]
    fn more_bits_cost_more_bytes_and_add_less_error() {
        let (shape, data) = activation();
        let story = |bits: &[u8]| {
            let input = Input { data: &data, shape, edges: &EDGES, bits, mask: Mask::Zeros };
            tell(&input, Pick::default()).unwrap().1
        };
        let (lo, hi) = (story(&[4, 2, 0, 0]), story(&[8, 6, 4, 2]));
        assert!(hi.stored_bytes > lo.stored_bytes);
        assert!(hi.sq_error < lo.sq_error, "{} vs {}", hi.sq_error, lo.sq_error);
        assert!(lo.sq_error > 0.0 && lo.sq_error < lo.energy);
    }

    #[test]
    fn the_mask_keeps_zeros_exact() {
        let (shape, data) = activation();
        let bits = [3, 2, 1, 0];
        // Tile (0, 1) of each plane is a third zero: the mask keeps those zeros; the clamp also
        // keeps the others at 0 or above, which the unbiased decode does not.
        let tile = |mask| {
            let input = Input { data: &data, shape, edges: &EDGES, bits: &bits, mask };
            tell(&input, Pick { tx: 1, ..Pick::default() }).unwrap().0
        };
        let (zeros, clamped) = (tile(Mask::Zeros), tile(Mask::Clamp));
        assert!(zeros.input.contains(&0.0) && zeros.input.iter().any(|&x| x > 0.0));
        for (i, x) in zeros.input.iter().enumerate() {
            assert!(clamped.decoded[i] >= 0.0);
            if *x == 0.0 {
                assert_eq!((zeros.decoded[i], clamped.decoded[i]), (0.0, 0.0));
            }
        }
        assert!(zeros.decoded.iter().any(|y| *y < 0.0), "{:?}", zeros.decoded);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let (shape, data) = activation();
        let bad_bits = Input { data: &data, shape, edges: &EDGES, bits: &[8, 4], mask: Mask::None };
        assert!(tell(&bad_bits, Pick::default()).unwrap_err().contains("bit-widths"));
        let short = Input { data: &data[..10], shape, edges: &EDGES, bits: &[8, 4, 2, 0], mask: Mask::None };
        assert!(tell(&short, Pick::default()).unwrap_err().contains("values"));
        let far = Pick { image: 9, channel: 9, ty: 9, tx: 9 }.clamped(shape);
        assert_eq!(far, Pick { image: 1, channel: 2, ty: 1, tx: 1 });
    }
}
