//! Native completion of mapped readbacks: drive the device until the callback has run.

use crate::error::{FdsrError, Result};

/// Blocks until all submitted work and map callbacks are done (native only).
pub(crate) fn wait_for_map(device: &wgpu::Device) -> Result<()> {
    device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| FdsrError::Readback(e.to_string()))
}
