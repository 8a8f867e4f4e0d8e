//! What the saved-activation store reports: byte counts of a window ([`SavedStats`]) and what it
//! did with each tensor of the last step ([`TensorRecord`]).

use crate::codec::api::FdsrStats;

/// Bytes that went through the store, since it was created or last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SavedStats {
    /// Tensors saved.
    pub tensors: u64,
    /// What dense activations would take as f32.
    pub fp32_bytes: u64,
    /// What was written for them (metadata and own masks included).
    pub stored_bytes: u64,
    /// Device memory reserved for them: the stored forms' regions (and own masks). Under a
    /// budget this is the budget; what is written ([`Self::stored_bytes`]) never exceeds it.
    pub reserved_bytes: u64,
    /// Bytes of packed masks and indices (stored as they are).
    pub packed_bytes: u64,
    /// Full tiles stored as references to a near-duplicate (similarity reuse).
    pub reuse_hits: u64,
    /// Full tiles that took part in reuse (the hit rate is `reuse_hits / reuse_eligible`).
    pub reuse_eligible: u64,
}

fn ratio_of(fp32: u64, stored: u64) -> f64 {
    if stored == 0 {
        1.0
    } else {
        fp32 as f64 / stored as f64
    }
}

impl SavedStats {
    /// fp32 bytes of dense activations over the device memory reserved for them and for the
    /// packed masks: the memory the store saves.
    pub fn ratio(&self) -> f64 {
        ratio_of(self.fp32_bytes, self.reserved_bytes + self.packed_bytes)
    }

    /// fp32 bytes of dense activations over the bytes written for them and for the masks.
    pub fn used_ratio(&self) -> f64 {
        ratio_of(self.fp32_bytes, self.stored_bytes + self.packed_bytes)
    }

    /// Fraction of the full tiles that similarity reuse stored as references (0 without reuse).
    pub fn reuse_hit_rate(&self) -> f64 {
        if self.reuse_eligible == 0 {
            0.0
        } else {
            self.reuse_hits as f64 / self.reuse_eligible as f64
        }
    }

    /// Adds another window's counts.
    pub fn add(&mut self, o: &SavedStats) {
        self.tensors += o.tensors;
        self.fp32_bytes += o.fp32_bytes;
        self.stored_bytes += o.stored_bytes;
        self.reserved_bytes += o.reserved_bytes;
        self.packed_bytes += o.packed_bytes;
        self.reuse_hits += o.reuse_hits;
        self.reuse_eligible += o.reuse_eligible;
    }
}

/// What the store did with one saved tensor in the last training step.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorRecord {
    /// Layer and what it saved, e.g. `conv2.input`, `relu4.mask`.
    pub name: String,
    /// Layer id (the store's key).
    pub layer: usize,
    /// Dimensions.
    pub shape: Vec<usize>,
    /// Bytes as f32 (packed tensors: their own size).
    pub fp32_bytes: u64,
    /// Bytes written (compressed size, metadata and an own zero mask included).
    pub stored_bytes: u64,
    /// Device bytes reserved for it (its regions and own zero mask).
    pub reserved_bytes: u64,
    /// Stored form: `fp32`, `packed`, `derived` (recomputed from another, nothing held) or the
    /// policy (`fdsr:bits=8,4,2,0,mask`, `uniform:2`, …).
    pub form: String,
    /// Bits per band (`fdsr` on 4-D tensors), else empty.
    pub bits: Vec<u8>,
    /// Tiles of class zero, DC-only, full and reference (`fdsr`), else zeros.
    pub classes: [u64; 4],
    /// Per band, `Σ coef²` over full tiles (index 0: DC, not summed) (`fdsr`), else empty.
    pub band_energy: Vec<f64>,
    /// Tiles stored as references, and full tiles that took part in reuse.
    pub reuse_hits: u64,
    /// Full tiles that took part in reuse.
    pub reuse_eligible: u64,
    /// The budget asked of the codec (bits per value), where the policy has one.
    pub budget: Option<f64>,
    /// Whether a zero mask of its own is stored with it (1 bit per value, in `stored_bytes`).
    pub own_mask: bool,
    /// Whether restoring re-applies a zero mask (its own, or the ReLU's that gates it).
    pub masked: bool,
    /// The analysis pass's statistics (`fdsr` on 4-D tensors): what the controller allocates from.
    pub analysis: Option<FdsrStats>,
    /// For a `derived` tensor, the stored tensor it is recomputed from (whose codec error it
    /// carries into its own layer's gradient).
    pub derived_from: Option<String>,
}

impl TensorRecord {
    /// A tensor kept as it is (`fp32` or `packed`): `bytes` held, nothing encoded.
    pub fn kept(name: &str, layer: usize, shape: &[usize], bytes: u64, form: &str) -> Self {
        TensorRecord {
            name: name.to_string(),
            layer,
            shape: shape.to_vec(),
            fp32_bytes: bytes,
            stored_bytes: bytes,
            reserved_bytes: bytes,
            form: form.to_string(),
            bits: Vec::new(),
            classes: [0; 4],
            band_energy: Vec::new(),
            reuse_hits: 0,
            reuse_eligible: 0,
            budget: None,
            own_mask: false,
            masked: false,
            analysis: None,
            derived_from: None,
        }
    }
}
