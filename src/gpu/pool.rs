//! Buffer pool: reuses GPU buffers and counts live and peak bytes by category.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Usage of every pooled storage buffer: bindable as storage, copyable both ways (and so
/// clearable on the device).
pub const STORAGE_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

/// What a buffer holds, for memory accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Model weights.
    Weights,
    /// Weight gradients.
    Gradients,
    /// Optimizer state.
    OptimizerState,
    /// Saved activations (compressed or not).
    SavedActivations,
    /// Temporary buffers of kernels (codec scratch, decompressed activations).
    Workspace,
}

impl Category {
    /// Snake-case name, as in metrics files.
    pub fn name(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::Gradients => "gradients",
            Category::OptimizerState => "optimizer_state",
            Category::SavedActivations => "saved_activations",
            Category::Workspace => "workspace",
        }
    }
}

/// All categories, in report order.
pub const CATEGORIES: [Category; 5] =
    [Category::Weights, Category::Gradients, Category::OptimizerState, Category::SavedActivations, Category::Workspace];

/// Live and peak bytes per category, and the peak of their sum.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryReport {
    /// Bytes in use now, by category.
    pub live: HashMap<Category, u64>,
    /// Highest bytes in use, by category.
    pub peak: HashMap<Category, u64>,
    /// Highest total bytes in use.
    pub peak_total: u64,
}

impl MemoryReport {
    fn add(&mut self, category: Category, size: u64) {
        let live = self.live.entry(category).or_default();
        *live += size;
        let live_now = *live;
        let peak = self.peak.entry(category).or_default();
        *peak = (*peak).max(live_now);
        let total: u64 = self.live.values().sum();
        self.peak_total = self.peak_total.max(total);
    }

    fn sub(&mut self, category: Category, size: u64) {
        if let Some(live) = self.live.get_mut(&category) {
            *live = live.saturating_sub(size);
        }
    }

    /// Live bytes of `category`.
    pub fn live_of(&self, category: Category) -> u64 {
        self.live.get(&category).copied().unwrap_or(0)
    }

    /// Peak bytes of `category`.
    pub fn peak_of(&self, category: Category) -> u64 {
        self.peak.get(&category).copied().unwrap_or(0)
    }
}

#[derive(Default)]
struct Inner {
    report: MemoryReport,
    free: HashMap<(u64, u32), Vec<wgpu::Buffer>>,
}

/// Pool of reusable buffers; cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct BufferPool {
    inner: Arc<Mutex<Inner>>,
}

/// A buffer on loan from the pool; returned (and its bytes released) on drop.
pub struct PooledBuffer {
    buffer: Option<wgpu::Buffer>,
    category: Mutex<Category>,
    pool: BufferPool,
}

impl std::ops::Deref for PooledBuffer {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        // Only `Drop` takes the buffer out, so it is present for the whole life of the value.
        self.buffer.as_ref().expect("pooled buffer present until drop")
    }
}

impl BufferPool {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the counters half-updated; keep going.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer of at least `size` bytes (rounded up to 256) with `usage`, counted in `category`.
    pub fn get(&self, device: &wgpu::Device, category: Category, size: u64, usage: wgpu::BufferUsages) -> PooledBuffer {
        let size = size.max(4).div_ceil(256) * 256;
        let mut inner = self.lock();
        let reused = inner.free.get_mut(&(size, usage.bits())).and_then(Vec::pop);
        let buffer = reused.unwrap_or_else(|| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("fdsr pooled"),
                size,
                usage,
                mapped_at_creation: false,
            })
        });
        inner.report.add(category, size);
        drop(inner);
        PooledBuffer { buffer: Some(buffer), category: Mutex::new(category), pool: self.clone() }
    }

    /// The current accounting.
    pub fn report(&self) -> MemoryReport {
        self.lock().report.clone()
    }

    /// Resets peaks to the live values (e.g. at the start of a training step).
    pub fn reset_peaks(&self) {
        let mut inner = self.lock();
        let r = &mut inner.report;
        r.peak = r.live.clone();
        r.peak_total = r.live.values().sum();
    }

    /// Frees every idle buffer.
    pub fn trim(&self) {
        self.lock().free.clear();
    }
}

impl PooledBuffer {
    fn category(&self) -> Category {
        *self.category.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the buffer in `category` from now on (e.g. a workspace tensor kept for backward).
    pub fn set_category(&self, category: Category) {
        let mut cat = self.category.lock().unwrap_or_else(|e| e.into_inner());
        if *cat != category {
            let mut inner = self.pool.lock();
            inner.report.sub(*cat, self.size());
            inner.report.add(category, self.size());
            *cat = category;
        }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        let category = self.category();
        if let Some(b) = self.buffer.take() {
            let mut inner = self.pool.lock();
            inner.report.sub(category, b.size());
            inner.free.entry((b.size(), b.usage().bits())).or_default().push(b);
        }
    }
}
