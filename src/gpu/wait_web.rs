//! Web completion of mapped readbacks: the browser's event loop runs the callback; nothing blocks.

use crate::error::Result;

/// On WebGPU the map callback fires from the event loop; awaiting the channel is enough.
pub(crate) fn wait_for_map(_device: &wgpu::Device) -> Result<()> {
    Ok(())
}
