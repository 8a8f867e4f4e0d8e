//! The ratio–accuracy frontier as an SVG (the `plotters` crate's SVG backend): one line per
//! policy family, error bars where several seeds give a spread, fp32 as a horizontal line.

use fdsr::{FdsrError, Result};
use plotters::prelude::*;

const COLORS: [RGBColor; 6] = [BLACK, RED, BLUE, GREEN, MAGENTA, CYAN];

/// A point: activation ratio, mean test accuracy, its spread over seeds.
pub type Point = (f64, f64, f64);
/// A named line of points.
pub type Series = (String, Vec<Point>);

fn err(e: impl std::fmt::Display) -> FdsrError {
    FdsrError::InvalidConfig(format!("plot: {e}"))
}

/// `series`: (name, points of (ratio, accuracy, spread)); a series named `none` is drawn as a
/// horizontal line at its accuracy.
pub fn frontier(series: &[Series]) -> Result<String> {
    let pts = series.iter().flat_map(|s| s.1.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x1, mut y0, mut y1) = (1.0f64, 1.0f64, 0.0f64);
    for p in pts {
        (x1, y0, y1) = (x1.max(p.0), y0.min(p.1 - p.2), y1.max(p.1 + p.2));
    }
    let pad = ((y1 - y0) * 0.1).max(0.005);
    let (ylo, yhi) = ((y0 - pad).max(0.0), (y1 + pad).min(1.0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("test accuracy against activation memory ratio", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x1 * 1.08, ylo..yhi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("activation ratio (fp32 bytes / bytes held)")
            .y_desc("test accuracy")
            .draw()
            .map_err(err)?;
        for (i, (name, p)) in series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            if name == "none" {
                let y = p.first().map_or(f64::NAN, |p| p.1);
                chart
                    .draw_series(LineSeries::new([(0.0, y), (x1 * 1.08, y)], c.stroke_width(1)))
                    .map_err(err)?
                    .label("fp32 (none)")
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c));
                continue;
            }
            chart
                .draw_series(LineSeries::new(p.iter().map(|q| (q.0, q.1)), c.stroke_width(2)))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
            chart.draw_series(p.iter().map(|q| Circle::new((q.0, q.1), 4, c.filled()))).map_err(err)?;
            chart
                .draw_series(
                    p.iter()
                        .filter(|q| q.2 > 0.0)
                        .map(|q| ErrorBar::new_vertical(q.0, q.1 - q.2, q.1, q.1 + q.2, c, 6)),
                )
                .map_err(err)?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plot_draws_every_series() {
        let s = vec![
            ("none".to_string(), vec![(1.0, 0.9, 0.0)]),
            ("uniform".to_string(), vec![(6.0, 0.85, 0.01), (11.0, 0.84, 0.0)]),
            ("fdsr".to_string(), vec![(8.0, 0.86, 0.0), (16.0, 0.85, 0.0)]),
        ];
        let svg = frontier(&s).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("uniform") && svg.contains("fdsr") && svg.contains("fp32"));
    }
}
