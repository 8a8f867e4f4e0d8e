//! What the GPU is asked to do, per kernel entry point: every dispatch is counted and drivers add
//! the floating-point operations they launch (always on, a counter per entry), and optionally
//! each pass is timed with timestamp queries.
//!
//! Timing is off by default. [`Profiler::enable`] (where the device has `TIMESTAMP_QUERY`) makes
//! every dispatch write a begin and an end timestamp; [`Profiler::collect`] resolves them after
//! the work is submitted and returns nanoseconds per entry point with the counts since the last
//! collect. Passes past the query capacity are not timed (and counted as such), never an error.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::GpuContext;
use crate::error::Result;

/// Timestamp pairs one profiling window can hold.
pub const CAPACITY: u32 = 2048;

struct State {
    set: wgpu::QuerySet,
    labels: Vec<&'static str>,
    untimed: u64,
}

/// Work recorded for one entry point.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Dispatches recorded.
    pub dispatches: u64,
    /// Floating-point operations the driver reported (a multiply-add counts 2; 0 where the
    /// kernel is not an arithmetic one).
    pub flops: f64,
}

/// Collected timings and counts per entry point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings {
    /// Entry point → (nanoseconds, passes); empty unless timing was enabled.
    pub by_entry: BTreeMap<&'static str, (f64, u64)>,
    /// Passes that found no free query slot.
    pub untimed: u64,
    /// Entry point → dispatches and operations, counted with or without timing.
    pub work: BTreeMap<&'static str, Work>,
}

/// Per-context pass profiler.
#[derive(Default)]
pub struct Profiler {
    state: Mutex<Option<State>>,
    work: Mutex<BTreeMap<&'static str, Work>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Profiler {
    /// Starts timing passes; returns `false` (and does nothing) without `TIMESTAMP_QUERY`.
    pub fn enable(&self, device: &wgpu::Device) -> bool {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return false;
        }
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("fdsr profiler"),
            ty: wgpu::QueryType::Timestamp,
            count: CAPACITY * 2,
        });
        *lock(&self.state) = Some(State { set, labels: Vec::new(), untimed: 0 });
        true
    }

    /// Whether passes are being timed.
    pub fn is_enabled(&self) -> bool {
        lock(&self.state).is_some()
    }

    /// Counts a dispatch of `entry`; when timing, also the query set and first index for its
    /// pass (if a slot is free).
    pub fn next_slot(&self, entry: &'static str) -> Option<(wgpu::QuerySet, u32)> {
        lock(&self.work).entry(entry).or_default().dispatches += 1;
        let mut guard = lock(&self.state);
        let st = guard.as_mut()?;
        if st.labels.len() as u32 >= CAPACITY {
            st.untimed += 1;
            return None;
        }
        st.labels.push(entry);
        Some((st.set.clone(), (st.labels.len() as u32 - 1) * 2))
    }

    /// Adds `flops` floating-point operations to what `entry` was asked to do.
    pub fn add_flops(&self, entry: &'static str, flops: f64) {
        lock(&self.work).entry(entry).or_default().flops += flops;
    }

    /// The counts since the last collect, and the timestamps of every pass recorded since then
    /// when timing (all of that work must be submitted); starts a new window.
    pub async fn collect(&self, ctx: &GpuContext) -> Result<Timings> {
        let work = std::mem::take(&mut *lock(&self.work));
        let taken = lock(&self.state)
            .as_mut()
            .map(|st| (st.set.clone(), std::mem::take(&mut st.labels), std::mem::take(&mut st.untimed)));
        let mut out = Timings { work, ..Default::default() };
        let Some((set, labels, untimed)) = taken else { return Ok(out) };
        out.untimed = untimed;
        if labels.is_empty() {
            return Ok(out);
        }
        let n = labels.len() as u32 * 2;
        let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("fdsr profiler resolve"),
            size: u64::from(n) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        enc.resolve_query_set(&set, 0..n, &resolve, 0);
        ctx.submit(enc);
        let bytes = super::read_buffer(ctx, &resolve, 0, u64::from(n) * 8).await?;
        let stamps: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
        let period = f64::from(ctx.queue.get_timestamp_period());
        for (i, label) in labels.iter().enumerate() {
            let ns = stamps[2 * i + 1].saturating_sub(stamps[2 * i]) as f64 * period;
            let e = out.by_entry.entry(label).or_default();
            e.0 += ns;
            e.1 += 1;
        }
        Ok(out)
    }
}
