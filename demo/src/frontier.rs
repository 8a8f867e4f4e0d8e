//! The ratio–accuracy frontier shipped with the app: the JSON that `fdsr sweep` wrote for a
//! measured sweep (`demo/assets/sweep-tiny.json`, compiled in, so native and browser show the
//! same), read into points per policy family. The command that made it is in
//! `demo/assets/README.md`.

use serde_json::Value;

/// The sweep compiled into the app.
pub const SHIPPED: &str = include_str!("../assets/sweep-tiny.json");

/// One run of the sweep (the mean over its seeds).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The policy as the CLI names it (`none`, `uniform:2`, `fdsr:ratio=8,mask,grad`).
    pub policy: String,
    /// fp32 bytes of the saved activations over the bytes held for them.
    pub ratio: f64,
    /// Test accuracy (mean over seeds).
    pub accuracy: f64,
    /// Its sample standard deviation over seeds (0 for one seed).
    pub spread: f64,
}

impl Point {
    /// `none`, `uniform`, `division` or `fdsr`.
    pub fn family(&self) -> &str {
        self.policy.split([':', ',']).next().unwrap_or(&self.policy)
    }
}

/// A sweep: its points and what it was run on.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Model of every run.
    pub model: String,
    /// Epochs, training images and seeds per run.
    pub epochs: u64,
    /// Training images per epoch.
    pub train_images: u64,
    /// Seeds per run.
    pub seeds: usize,
    /// Adapter the sweep ran on.
    pub adapter: String,
    /// The runs, in the sweep's order.
    pub points: Vec<Point>,
}

/// Reads the rows of an `fdsr sweep` JSON (an array of run summaries).
pub fn parse(text: &str) -> Result<Sweep, String> {
    let rows: Vec<Value> = serde_json::from_str(text).map_err(|e| format!("sweep JSON: {e}"))?;
    let first = rows.first().ok_or("the sweep has no runs")?;
    let mut points = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let num = |v: &Value, what: &str| v.as_f64().ok_or_else(|| format!("run {i} of the sweep has no {what}"));
        points.push(Point {
            policy: r["policy"].as_str().ok_or_else(|| format!("run {i} of the sweep has no policy"))?.to_string(),
            ratio: num(&r["saved"]["activation_ratio"], "activation ratio")?,
            accuracy: num(&r["test_accuracy"], "test accuracy")?,
            spread: r["test_accuracy_std"].as_f64().unwrap_or(0.0),
        });
    }
    Ok(Sweep {
        model: first["model"].as_str().unwrap_or("?").to_string(),
        epochs: first["epochs"].as_u64().unwrap_or(0),
        train_images: first["train_images"].as_u64().unwrap_or(0),
        seeds: first["seeds"].as_array().map_or(1, Vec::len),
        adapter: first["adapter"].as_str().unwrap_or("?").to_string(),
        points,
    })
}

/// The shipped sweep.
pub fn shipped() -> Result<Sweep, String> {
    parse(SHIPPED)
}

impl Sweep {
    /// Points of each family, sorted by ratio, families in order of first appearance.
    pub fn families(&self) -> Vec<(&str, Vec<&Point>)> {
        let mut out: Vec<(&str, Vec<&Point>)> = Vec::new();
        for p in &self.points {
            match out.iter_mut().find(|f| f.0 == p.family()) {
                Some(f) => f.1.push(p),
                None => out.push((p.family(), vec![p])),
            }
        }
        for f in &mut out {
            f.1.sort_by(|a, b| a.ratio.total_cmp(&b.ratio));
        }
        out
    }

    /// The fp32 run's accuracy, if the sweep has one.
    pub fn fp32_accuracy(&self) -> Option<f64> {
        self.points.iter().find(|p| p.policy == "none").map(|p| p.accuracy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_sweep_reads_and_has_every_family() {
        let s = shipped().unwrap();
        assert_eq!(s.model, "tiny");
        assert!(s.epochs >= 1 && s.train_images > 0, "{s:?}");
        let fams: Vec<&str> = s.families().iter().map(|f| f.0).collect();
        for f in ["none", "uniform", "fdsr"] {
            assert!(fams.contains(&f), "{fams:?}");
        }
        for p in &s.points {
            assert!(p.ratio >= 0.5 && (0.0..=1.0).contains(&p.accuracy), "{p:?}");
        }
        let fp32 = s.fp32_accuracy().unwrap();
        assert!(fp32 > 0.5, "a trained fp32 run: {fp32}");
        // Compression holds less: every compressed run's ratio is above the fp32 run's.
        let base = s.points.iter().find(|p| p.policy == "none").unwrap().ratio;
        assert!(s.points.iter().filter(|p| p.policy != "none").all(|p| p.ratio > base * 2.0));
    }

    #[test]
    fn bad_sweeps_are_errors() {
        assert!(parse("[]").unwrap_err().contains("no runs"));
        assert!(parse("{").unwrap_err().contains("sweep JSON"));
        let e = parse(r#"[{"policy":"none","saved":{}}]"#).unwrap_err();
        assert!(e.contains("activation ratio"), "{e}");
    }
}
