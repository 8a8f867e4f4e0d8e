//! Optional GPU timing of every compute pass with timestamp queries, summed by entry point.
//!
//! Off by default. [`Profiler::enable`] (where the device has `TIMESTAMP_QUERY`) makes every
//! dispatch write a begin and an end timestamp; [`Profiler::collect`] resolves them after the
//! work is submitted and returns nanoseconds per entry point. Passes past the query capacity are
//! not timed (and counted as such), never an error.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::GpuContext;
use crate::error::Result;

/// Timestamp pairs one profiling window can hold.
pub const CAPACITY: u32 = 2048;

struct State {
    set: wgpu::QuerySet,
    labels: Vec<&'static str>,
    untimed: u64,
}

/// Collected timings: total nanoseconds and pass count per entry point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings {
    /// Entry point → (nanoseconds, passes).
    pub by_entry: BTreeMap<&'static str, (f64, u64)>,
    /// Passes that found no free query slot.
    pub untimed: u64,
}

/// Per-context pass profiler.
#[derive(Default)]
pub struct Profiler {
    state: Mutex<Option<State>>,
}

impl Profiler {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<State>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

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
        *self.lock() = Some(State { set, labels: Vec::new(), untimed: 0 });
        true
    }

    /// Whether passes are being timed.
    pub fn is_enabled(&self) -> bool {
        self.lock().is_some()
    }

    /// The query set and first index for the next pass, when profiling and a slot is free.
    pub fn next_slot(&self, entry: &'static str) -> Option<(wgpu::QuerySet, u32)> {
        let mut guard = self.lock();
        let st = guard.as_mut()?;
        if st.labels.len() as u32 >= CAPACITY {
            st.untimed += 1;
            return None;
        }
        st.labels.push(entry);
        Some((st.set.clone(), (st.labels.len() as u32 - 1) * 2))
    }

    /// Reads the timestamps of every pass recorded since the last collect (all of that work must
    /// be submitted) and starts a new window.
    pub async fn collect(&self, ctx: &GpuContext) -> Result<Timings> {
        let taken = {
            let mut guard = self.lock();
            guard.as_mut().map(|st| (st.set.clone(), std::mem::take(&mut st.labels), std::mem::take(&mut st.untimed)))
        };
        let Some((set, labels, untimed)) = taken else { return Ok(Timings::default()) };
        let mut out = Timings { untimed, ..Default::default() };
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
        ctx.queue.submit([enc.finish()]);
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
