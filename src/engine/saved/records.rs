//! Per-tensor records of a step: what the host knows when a tensor is saved, and the handles of
//! what only the device knows (an `fdsr` segment's chosen bits, tile classes, band statistics,
//! bytes written), read together in one readback when the records are asked for.

use std::sync::Arc;

use super::stats::TensorRecord;
use crate::codec::alloc::FdsrStats;
use crate::codec::config::{AllocWeights, BitChoice, Policy};
use crate::codec::resident::layout::{self as l, FdsrLayout, STAT_WORDS};
use crate::codec::resident::{Resident, SegmentForm};
use crate::error::Result;
use crate::gpu::kernel::submit;
use crate::gpu::{read_words, Category, GpuContext, PooledBuffer, STORAGE_USAGE};

/// One saved tensor's record, completed from the device by `records::read`.
pub struct PendingRecord {
    record: TensorRecord,
    /// Per `fdsr` segment: its layout and statistics buffer.
    segments: Vec<(FdsrLayout, Arc<PooledBuffer>)>,
    weights: AllocWeights,
}

impl PendingRecord {
    /// A tensor kept as it is (`fp32` or `packed`).
    pub fn kept(name: &str, layer: usize, shape: &[usize], bytes: u64, form: &str) -> Self {
        let record = TensorRecord::kept(name, layer, shape, bytes, form);
        PendingRecord { record, segments: Vec::new(), weights: AllocWeights::PLAIN }
    }

    /// A tensor recomputed from the stored tensor `source` instead of stored
    /// ([`super::Derivation`]): its fp32 bytes, nothing stored.
    pub fn derived(name: &str, layer: usize, shape: &[usize], bytes: u64, source: Option<&str>) -> Self {
        let mut p = Self::kept(name, layer, shape, bytes, "derived");
        (p.record.stored_bytes, p.record.reserved_bytes) = (0, 0);
        p.record.derived_from = source.map(str::to_string);
        p
    }

    /// The tensor's name and layer.
    pub fn name_at(&self) -> (&str, usize) {
        (&self.record.name, self.record.layer)
    }

    /// A tensor stored as `r` with `policy` (the budget asked of the codec included), and the
    /// bytes of its own zero mask where it has one (`mask`: `Some(0)` for a ReLU's shared mask).
    pub fn stored(name: &str, layer: usize, r: &Resident, policy: &Policy, mask: Option<u64>) -> Self {
        let mut p = Self::kept(name, layer, &r.shape, r.numel() * 4, &policy.to_string());
        let mask_bytes = mask.unwrap_or(0);
        p.record.reserved_bytes = r.reserved_bytes() + mask_bytes;
        p.record.stored_bytes = r.host_used_bytes().unwrap_or(0) + mask_bytes;
        p.record.own_mask = mask_bytes > 0;
        p.record.masked = mask.is_some();
        if let Policy::Fdsr(cfg) = policy {
            p.record.budget = match cfg.bits {
                BitChoice::Budget(b) => Some(b),
                BitChoice::Fixed(_) => None,
            };
            p.weights = cfg.weights();
            p.record.analysis = (r.shape.len() == 4).then(|| FdsrStats::new(&cfg.band_edges));
        }
        for s in &r.segments {
            if let SegmentForm::Fdsr { layout, stats, .. } = &s.form {
                p.segments.push((*layout, stats.clone()));
            }
        }
        p
    }
}

/// The records of `pending` as the host knows them (names, layers, shapes, sources, reserved
/// bytes), without reading the device: no chosen bits, band statistics or bytes written.
pub fn known(pending: &[PendingRecord]) -> Vec<TensorRecord> {
    pending.iter().map(|p| p.record.clone()).collect()
}

/// The records of `pending`, completed with one readback of every `fdsr` segment's statistics.
pub async fn read(ctx: &GpuContext, pending: &[PendingRecord]) -> Result<Vec<TensorRecord>> {
    let count: u64 = pending.iter().map(|p| p.segments.len() as u64).sum();
    if count == 0 {
        return Ok(known(pending));
    }
    let stride = STAT_WORDS * 4;
    let all = ctx.pool.get(&ctx.device, Category::Workspace, count * stride, STORAGE_USAGE);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for (i, (_, stats)) in pending.iter().flat_map(|p| &p.segments).enumerate() {
        enc.copy_buffer_to_buffer(stats, 0, &all, i as u64 * stride, stride);
    }
    submit(ctx, "read records", enc).await?;
    let words = read_words(ctx, &all, (count * STAT_WORDS) as usize).await?;
    let mut segs = words.chunks(STAT_WORDS as usize);
    let mut out = Vec::with_capacity(pending.len());
    for p in pending {
        let mut r = p.record.clone();
        for (k, (layout, _)) in p.segments.iter().enumerate() {
            let Some(s) = segs.next() else { break };
            complete(&mut r, layout, s, k == 0, p.weights);
        }
        out.push(r);
    }
    Ok(out)
}

/// Adds one segment's statistics `s` to `r` (its bits are the first segment's).
fn complete(r: &mut TensorRecord, layout: &FdsrLayout, s: &[u32], first: bool, weights: AllocWeights) {
    let f = |i: usize| f64::from(f32::from_bits(s[i]));
    let (zero, dc, full, hits) = (s[l::STAT_ZERO], s[l::STAT_DC], s[l::STAT_FULL], s[l::STAT_HITS]);
    r.stored_bytes += layout.used_bytes(s[l::STAT_USED].into());
    let Some(a) = r.analysis.as_mut() else { return };
    let nb = a.bands();
    if first {
        r.bits = s[l::STAT_BITS..l::STAT_BITS + nb].iter().map(|&b| b as u8).collect();
        r.band_energy = vec![0.0; nb];
        a.set_weights(weights);
    }
    let (zero, dc, full, hits) = (u64::from(zero), u64::from(dc), u64::from(full), u64::from(hits));
    r.classes[0] += zero;
    r.classes[1] += dc;
    r.classes[2] += full.saturating_sub(hits);
    r.classes[3] += hits;
    r.reuse_hits += hits;
    if r.form.contains("reuse") {
        r.reuse_eligible += full;
    }
    for j in 1..nb {
        r.band_energy[j] += f(l::STAT_ENERGY + j);
        a.band_energy[j] += f(l::STAT_ENERGY + j);
        a.band_sum_n_max2[j] += f(l::STAT_SUM_N_MAX2 + j);
    }
    (a.zero_tiles, a.dc_tiles, a.full_tiles) = (a.zero_tiles + zero, a.dc_tiles + dc, a.full_tiles + full);
    a.planes += layout.planes;
    a.numel = r.shape.iter().product::<usize>() as u64;
    a.dc_sum_n_max2 += f(l::STAT_DC_TERM);
    a.gmax = a.gmax.max(f32::from_bits(s[l::STAT_GMAX]));
}
