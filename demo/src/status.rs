//! A summary of the run for outside observers (the browser test reads it as
//! `window.fdsrDemo`; the native bench prints it).

use crate::run::Run;

/// What the run has done and which panels have data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// Steps taken.
    pub steps: u64,
    /// Loss of the first step.
    pub loss_first: f64,
    /// Loss of the last step.
    pub loss_last: f64,
    /// Mean loss of the first and of the last up to 5 steps.
    pub loss_head: f64,
    /// See `loss_head`.
    pub loss_tail: f64,
    /// Seconds from the session's creation to the end of its first step.
    pub first_step_s: f64,
    /// Steps per second (step time only).
    pub steps_per_s: f64,
    /// Saved tensors recorded in the last step.
    pub records: usize,
    /// Rows of the bit-allocation heatmap (tensor × band).
    pub bit_rows: usize,
    /// Tensors with tile classes.
    pub class_rows: usize,
    /// fp32 and stored bytes of the last step's saved activations.
    pub fp32_bytes: u64,
    /// See `fp32_bytes`.
    pub stored_bytes: u64,
    /// The last error, empty if none.
    pub error: String,
    /// Adapter of the training device.
    pub adapter: String,
    /// Steps of the fp32 run beside it.
    pub base_steps: u64,
    /// Its last loss.
    pub base_loss_last: f64,
    /// fp32 bytes of its last step's saved activations.
    pub base_fp32_bytes: u64,
    /// Bands of the codec story's tensor that cost bytes (0: no story).
    pub story_bands: usize,
    /// Stored bytes of the codec story's tensor.
    pub story_bytes: u64,
    /// Points of the shipped ratio–accuracy sweep.
    pub frontier_points: usize,
    /// Evaluations of the policy run on the held-out test images.
    pub test_evals: usize,
    /// Its last test accuracy (the frontier's live point).
    pub test_accuracy: f64,
    /// Seconds the last evaluation took.
    pub test_seconds: f64,
    /// The largest batch of the policy run under the memory cap (0: none shown or none fits).
    pub cap_batch: u64,
    /// The same for the fp32 run.
    pub cap_batch_fp32: u64,
    /// The codec story's clickable feature map: left, top, width and height in points.
    pub story_map: [f32; 4],
    /// Its plane's height and width in values.
    pub story_plane: [usize; 2],
    /// The main view's three columns fitted the window in the last frame.
    pub fits: bool,
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

impl Status {
    /// The status of `run` now.
    pub fn of(run: &Run) -> Status {
        let sps = run.steps_per_second().unwrap_or(0.0);
        let sh = run.shared.borrow();
        let steps = &sh.history.steps;
        let k = steps.len().min(5);
        let last = steps.last();
        Status {
            steps: last.map_or(0, |s| s.step),
            loss_first: steps.first().map_or(0.0, |s| s.loss),
            loss_last: last.map_or(0.0, |s| s.loss),
            loss_head: mean(steps[..k].iter().map(|s| s.loss)),
            loss_tail: mean(steps[steps.len() - k..].iter().map(|s| s.loss)),
            first_step_s: sh.first_step_s.unwrap_or(0.0),
            steps_per_s: sps,
            records: last.map_or(0, |s| s.records.len()),
            bit_rows: last.map_or(0, |s| s.records.iter().map(|r| r.bits.len()).sum()),
            class_rows: last.map_or(0, |s| s.records.iter().filter(|r| r.classes.iter().sum::<u64>() > 0).count()),
            fp32_bytes: last.map_or(0, |s| s.saved.fp32_bytes),
            stored_bytes: last.map_or(0, |s| s.saved.stored_bytes),
            error: sh.error.clone().unwrap_or_default(),
            adapter: run.ctx.adapter_description(),
            ..Status::default()
        }
    }

    /// One-line JSON.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"steps\":{},\"loss_first\":{},\"loss_last\":{},\"loss_head\":{},\"loss_tail\":{},\"first_step_s\":{},\"steps_per_s\":{},\"records\":{},\"bit_rows\":{},\"class_rows\":{},\"fp32_bytes\":{},\"stored_bytes\":{},\"error\":{:?},\"adapter\":{:?},\"base_steps\":{},\"base_loss_last\":{},\"base_fp32_bytes\":{},\"story_bands\":{},\"story_bytes\":{},\"frontier_points\":{},\"test_evals\":{},\"test_accuracy\":{},\"test_seconds\":{},\"cap_batch\":{},\"cap_batch_fp32\":{},\"story_map\":{:?},\"story_plane\":{:?},\"fits\":{}}}",
            self.steps, self.loss_first, self.loss_last, self.loss_head, self.loss_tail, self.first_step_s,
            self.steps_per_s, self.records, self.bit_rows, self.class_rows, self.fp32_bytes, self.stored_bytes,
            self.error, self.adapter, self.base_steps, self.base_loss_last, self.base_fp32_bytes, self.story_bands,
            self.story_bytes, self.frontier_points, self.test_evals, self.test_accuracy, self.test_seconds, self.cap_batch, self.cap_batch_fp32, self.story_map, self.story_plane, self.fits
        )
    }
}
