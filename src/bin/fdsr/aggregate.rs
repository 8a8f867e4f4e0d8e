//! Several seeds of one run as one row: the mean of every figure the tables read, with the
//! accuracy's spread and every seed's summary kept for the JSON.

use serde_json::{json, Value};

/// Figures averaged over the seeds (paths into a run's summary).
const MEANS: &[&[&str]] = &[
    &["test_accuracy"],
    &["test_loss"],
    &["step_ms"],
    &["images_per_s"],
    &["probe_grad_error"],
    &["bitops_saved_vs_static"],
    &["saved", "activation_ratio"],
    &["saved", "used_ratio"],
    &["saved", "reuse_hit_rate"],
    &["memory", "peak_total"],
];

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

/// One seed's summary as it is; several as the first with the means of [`MEANS`], plus
/// `test_accuracy_std` (sample standard deviation), `test_accuracies`, `seeds` and `runs`.
pub fn mean_row(runs: Vec<Value>) -> Value {
    if runs.len() < 2 {
        return runs.into_iter().next().unwrap_or(Value::Null);
    }
    let mut row = runs[0].clone();
    for path in MEANS {
        let vals: Vec<f64> = runs.iter().filter_map(|r| at(r, path).as_f64()).collect();
        if vals.len() == runs.len() {
            let (last, parents) = path.split_last().map_or(("", &[][..]), |(l, p)| (*l, p));
            let slot = parents.iter().fold(&mut row, |v, k| &mut v[*k]);
            slot[last] = json!(vals.iter().sum::<f64>() / vals.len() as f64);
        }
    }
    let acc: Vec<f64> = runs.iter().filter_map(|r| r["test_accuracy"].as_f64()).collect();
    let mean = acc.iter().sum::<f64>() / acc.len().max(1) as f64;
    let var = acc.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (acc.len().max(2) - 1) as f64;
    row["test_accuracy_std"] = json!(var.sqrt());
    row["test_accuracies"] = json!(acc);
    row["seeds"] = json!(runs.iter().map(|r| r["seed"].clone()).collect::<Vec<_>>());
    row["runs"] = json!(runs);
    row
}

/// `0.9012`, or `0.9012 ± 0.0021` for a row of several seeds.
pub fn accuracy_cell(r: &Value) -> String {
    let acc = r["test_accuracy"].as_f64().unwrap_or(f64::NAN);
    match r["test_accuracy_std"].as_f64() {
        Some(sd) => format!("{acc:.4} ± {sd:.4}"),
        None => format!("{acc:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_average_and_keep_their_spread() {
        let run =
            |acc: f64, ratio: f64| json!({ "test_accuracy": acc, "saved": { "activation_ratio": ratio }, "seed": 1 });
        let row = mean_row(vec![run(0.8, 10.0), run(0.9, 12.0), run(0.85, 11.0)]);
        assert!((row["test_accuracy"].as_f64().unwrap() - 0.85).abs() < 1e-12);
        assert!((row["saved"]["activation_ratio"].as_f64().unwrap() - 11.0).abs() < 1e-12);
        assert!((row["test_accuracy_std"].as_f64().unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(accuracy_cell(&row), "0.8500 ± 0.0500");
        assert_eq!(accuracy_cell(&mean_row(vec![run(0.8, 10.0)])), "0.8000");
    }
}
