//! Transfer accounting: bytes uploaded to and read back from the device, the times the host
//! waited for it, the compute passes recorded and the command buffers submitted. These are what
//! a real GPU pays for and a software adapter hides (there host and device share memory), so
//! tests assert on them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running counters of one context (shared by everything that uses it).
#[derive(Debug, Default)]
pub struct Transfers {
    uploaded: AtomicU64,
    read_back: AtomicU64,
    host_waits: AtomicU64,
    dispatches: AtomicU64,
    submits: AtomicU64,
    /// Nanoseconds the host spent inside queue submissions (natively; a driver may block there
    /// until earlier work drains). A time, not a count: kept out of [`TransferCounts`].
    submit_ns: AtomicU64,
}

/// A snapshot of the counters, or the difference of two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferCounts {
    /// Bytes written from the host: buffer uploads and initialized buffers (kernel parameters included).
    pub uploaded: u64,
    /// Bytes copied back to the host.
    pub read_back: u64,
    /// Times the host blocked until the device finished submitted work (natively; on the web
    /// these are awaited map callbacks, counted the same way).
    pub host_waits: u64,
    /// Compute passes recorded.
    pub dispatches: u64,
    /// Command buffers submitted (each a queue submission the driver pays for).
    pub submits: u64,
}

impl TransferCounts {
    /// Adds another window's counts.
    pub fn add(&mut self, o: &TransferCounts) {
        self.uploaded += o.uploaded;
        self.read_back += o.read_back;
        self.host_waits += o.host_waits;
        self.dispatches += o.dispatches;
        self.submits += o.submits;
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &TransferCounts) -> TransferCounts {
        TransferCounts {
            uploaded: self.uploaded.saturating_sub(earlier.uploaded),
            read_back: self.read_back.saturating_sub(earlier.read_back),
            host_waits: self.host_waits.saturating_sub(earlier.host_waits),
            dispatches: self.dispatches.saturating_sub(earlier.dispatches),
            submits: self.submits.saturating_sub(earlier.submits),
        }
    }
}

impl Transfers {
    /// Counts `bytes` written from the host.
    pub fn upload(&self, bytes: u64) {
        self.uploaded.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` copied to the host.
    pub fn read_back(&self, bytes: u64) {
        self.read_back.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts one blocking wait of the host for the device.
    pub fn host_wait(&self) {
        self.host_waits.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one recorded compute pass.
    pub fn dispatch(&self) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one submitted command buffer.
    pub fn submit(&self) {
        self.submits.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds the time one queue submission held the host.
    pub fn submit_time(&self, d: std::time::Duration) {
        self.submit_ns.fetch_add(d.as_nanos().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
    }

    /// Seconds the host has spent inside queue submissions so far.
    pub fn seconds_in_submit(&self) -> f64 {
        self.submit_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// The counters now.
    pub fn snapshot(&self) -> TransferCounts {
        TransferCounts {
            uploaded: self.uploaded.load(Ordering::Relaxed),
            read_back: self.read_back.load(Ordering::Relaxed),
            host_waits: self.host_waits.load(Ordering::Relaxed),
            dispatches: self.dispatches.load(Ordering::Relaxed),
            submits: self.submits.load(Ordering::Relaxed),
        }
    }
}
