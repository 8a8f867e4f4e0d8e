//! The device-resident path (what training uses): encode and decode recorded into one encoder,
//! nothing read back; the bits chosen on the device exactly as `reference::alloc_rule` chooses
//! them from the same totals; the budget a hard bound; round trips against the reference.

mod common;

use fdsr::bench::activations::{conv3x3_relu, smooth_images};
use fdsr::codec::api::{compress, decompress};
use fdsr::codec::resident::fdsr::PackLaunch;
use fdsr::codec::resident::layout::{self, FdsrLayout, HEADER_WORDS};
use fdsr::codec::resident::{record_decode, record_encode, Resident, SegmentForm};
use fdsr::gpu::kernel::{storage_init, storage_zeroed};
use fdsr::gpu::{read_words, Category, ContextOptions, TransferCounts};
use fdsr::reference::alloc_rule::{self, Limits, Totals, STATS};
use fdsr::{reference, CodecOptions, FdsrError, GpuContext, Policy};
use pollster::block_on;

fn relu_activation(shape: [usize; 4], seed: u32) -> Vec<f32> {
    let [n, c, h, w] = shape;
    conv3x3_relu(&smooth_images(n, h, w, seed), n, h, w, c, seed + 1)
}

/// Encodes and decodes `x` on the device in one encoder and one submit (asserting that neither
/// reads back nor waits); returns the stored form and the decoded values.
fn round_trip(ctx: &GpuContext, x: &[f32], shape: &[usize], policy: &str, opts: &CodecOptions) -> (Resident, Vec<f32>) {
    let (r, y, _) = round_trip_counted(ctx, x, shape, policy, opts);
    (r, y)
}

/// [`round_trip`], with the transfers of recording the encode and of recording the decode.
fn round_trip_counted(
    ctx: &GpuContext,
    x: &[f32],
    shape: &[usize],
    policy: &str,
    opts: &CodecOptions,
) -> (Resident, Vec<f32>, [TransferCounts; 2]) {
    let p: Policy = policy.parse().unwrap();
    let input = storage_init(ctx, "x", bytemuck::cast_slice(x));
    let out = storage_zeroed(ctx, "y", x.len() as u64 * 4);
    let acc = storage_zeroed(ctx, "acc", 16);
    let before = ctx.transfer_counts();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let r = record_encode(ctx, &mut enc, &input, shape, &p, opts, Category::SavedActivations, &acc).unwrap();
    let encoded = ctx.transfer_counts().since(&before);
    record_decode(ctx, &mut enc, &r, &out).unwrap();
    let decoded = ctx.transfer_counts().since(&before).since(&encoded);
    ctx.queue.submit([enc.finish()]);
    let t = ctx.transfer_counts().since(&before);
    assert_eq!((t.read_back, t.host_waits), (0, 0), "{policy}: recording read back or waited");
    let y: Vec<f32> = block_on(read_words(ctx, &out, x.len())).unwrap().into_iter().map(f32::from_bits).collect();
    (r, y, [encoded, decoded])
}

/// Values of `got` that differ from `want` by more than 1e-4 of the largest |x|.
fn differing(got: &[f32], want: &[f32], x: &[f32]) -> usize {
    let peak = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    got.iter().zip(want).filter(|(a, b)| (*a - *b).abs() > 1e-4 * peak).count()
}

fn words(ctx: &GpuContext, b: &wgpu::Buffer, n: u64) -> Vec<u32> {
    block_on(read_words(ctx, b, n as usize)).unwrap()
}

#[test]
fn device_bits_follow_the_reference_rule_and_fit_the_budget() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [4, 8, 32, 32];
    let x = relu_activation(shape, 50);
    let (mut launches, mut chosen) = (std::collections::HashSet::new(), std::collections::HashMap::new());
    for (policy, budget) in [
        ("fdsr:budget=1", 1.0),
        ("fdsr:budget=1,grad", 1.0),
        ("fdsr:budget=1,grad,drop=dc", 1.0),
        ("fdsr:budget=2,grad", 2.0),
        ("fdsr:budget=2,grad=4", 2.0),
        ("fdsr:budget=2,grad=4,drop=64", 2.0),
        ("fdsr:budget=3", 3.0),
    ] {
        let (w, edges) = match policy.parse::<Policy>().unwrap() {
            Policy::Fdsr(c) => (c.weights(), c.band_edges),
            _ => unreachable!("an fdsr policy"),
        };
        let nb = edges.len() - 1;
        let (r, y) = round_trip(&ctx, &x, &shape, policy, &CodecOptions::default());
        let s = &r.segments[0];
        let SegmentForm::Fdsr { layout: l, stats, .. } = &s.form else { panic!("not fdsr") };
        assert_eq!(l.words, HEADER_WORDS + (budget * x.len() as f64 / 32.0) as u64, "{policy}: region size");
        let head = words(&ctx, &s.region, HEADER_WORDS);
        let st = words(&ctx, stats, layout::STAT_WORDS);
        // The choice from the totals the device reduced, by the reference rule.
        let f = |i: usize| f32::from_bits(st[i]);
        let mut t = Totals { stats: [0.0; STATS], dc_term: f(layout::STAT_DC_TERM) };
        for j in 0..8 {
            t.stats[j] = f(layout::STAT_SUM_N_MAX2 + j);
            t.stats[8 + j] = f(layout::STAT_ENERGY + j);
        }
        t.stats[16] = st[layout::STAT_ZERO] as f32;
        t.stats[17] = st[layout::STAT_DC] as f32;
        t.stats[18] = st[layout::STAT_FULL] as f32;
        let lim = Limits { edges: &edges, limit_bits: l.limit_bits() as u32, weight: w.dc, drop_weight: w.dropped };
        let (bits, no_fit) = alloc_rule::choose(&t, &lim);
        launches.insert(PackLaunch::for_bits(&bits));
        let got: Vec<u8> = head[..nb].iter().map(|&b| b as u8).collect();
        assert_eq!(got, bits, "{policy}: device bits vs the reference rule");
        chosen.insert(policy, bits.clone());
        assert!(!no_fit && head[layout::H_FLAGS] == 0, "{policy}: flags {}", head[layout::H_FLAGS]);
        // The totals match the reference analysis (f64 sums) closely.
        let a = reference::fdsr::analyze(&x, &shape, &edges, 1e-3).unwrap().stats;
        assert_eq!(u64::from(st[layout::STAT_FULL]), a.full_tiles, "{policy}: full tiles");
        for j in 1..nb {
            let rel = (f64::from(t.stats[j]) - a.band_sum_n_max2[j]).abs() / a.band_sum_n_max2[j].max(1e-30);
            assert!(rel < 1e-4, "{policy}: band {j} statistic off by {rel}");
        }
        // What was written fits the region, and decodes like the reference with those bits.
        let used = head[layout::H_USED];
        assert!(l.used_bytes(used.into()) <= 4 * l.words, "{policy}: used {used} bits");
        assert_eq!(st[layout::STAT_USED], used);
        let ra = reference::fdsr::analyze(&x, &shape, &edges, 1e-3).unwrap();
        let want =
            reference::fdsr::decode(&reference::fdsr::encode(&ra, &bits, &CodecOptions::default()), &shape).unwrap();
        let off = differing(&y, &want, &x);
        assert!(off * 100 <= x.len(), "{policy}: {off} of {} decoded values differ", x.len());
    }
    // The dropped bands' weight is the device's own: the default and the DC's choose apart here.
    assert_ne!(chosen["fdsr:budget=1,grad"], chosen["fdsr:budget=1,grad,drop=dc"]);
    // Low budgets give the top band 0 bits: the pack without it wrote these (the launch with
    // every band: the fixed bits of `every_policy_round_trips_on_the_device`).
    assert!(launches.contains(&PackLaunch::SkipTop), "{launches:?}");
}

#[test]
fn every_policy_round_trips_on_the_device() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [2, 3, 21, 27];
    let x = relu_activation(shape, 7);
    let opts = CodecOptions { seed: 5, tensor_id: 9, ..Default::default() };
    let (_, y) = round_trip(&ctx, &x, &shape, "lossless", &opts);
    assert_eq!(y, x, "lossless");
    // 8,16,3,2: an AC band of f16 codes (the compact launch); 8,4,3,0: a top band of 0 bits (the
    // launch without it), and the same on the reuse path.
    for policy in [
        "uniform:2",
        "uniform:5",
        "division",
        "fdsr:bits=8,4,3,2",
        "fdsr:bits=8,16,3,2",
        "fdsr:bits=8,4,3,0",
        "fdsr:bits=8,4,3,2,reuse",
        "fdsr:bits=8,4,3,0,reuse",
    ] {
        let p: Policy = policy.parse().unwrap();
        let c = reference::compress(&x, &shape, &p, &opts).unwrap();
        let want = reference::decompress(&c).unwrap();
        let (r, y) = round_trip(&ctx, &x, &shape, policy, &opts);
        let off = differing(&y, &want, &x);
        assert!(off * 100 <= x.len(), "{policy}: {off} of {} decoded values differ from the reference", x.len());
        if let Some(used) = r.host_used_bytes() {
            assert_eq!(used, r.reserved_bytes().min(used), "{policy}");
        }
    }
}

#[test]
fn segmented_tensors_round_trip_under_one_budget_each() {
    let Some(ctx) = common::gpu() else { return };
    let Some(small) =
        common::gpu_with(ContextOptions { max_binding_bytes: Some(3 * 20 * 20 * 4), ..Default::default() })
    else {
        return;
    };
    let shape = [3, 4, 20, 20];
    let x = relu_activation(shape, 60);
    let opts = CodecOptions { seed: 11, ..Default::default() };
    for (policy, slack) in [
        ("fdsr:budget=2,mask", 1.5),
        ("fdsr:budget=3,reuse", 1.5),
        ("fdsr:budget=2,mask,grad", 2.0),
        ("uniform:3", 1.5),
        ("division", 1.5),
    ] {
        let (whole, a) = round_trip(&ctx, &x, &shape, policy, &opts);
        let (parts, b) = round_trip(&small, &x, &shape, policy, &opts);
        assert!(whole.segments.len() == 1 && parts.segments.len() > 1, "{policy}: not segmented");
        let peak = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let rms = |d: &[f32]| (d.iter().zip(&x).map(|(p, q)| (p - q).powi(2)).sum::<f32>() / x.len() as f32).sqrt();
        // Each segment has its own bits and scale base, so the two decodes differ; the segmented
        // one may lose a little to its segments' metadata, never much. Under `,grad` a little
        // more (1.85× here): its allocation keeps bands at one bit rather than drop them, which
        // is not the least reconstruction error, and a segment's metadata takes a bit from some.
        let (err, err_parts) = (rms(&a), rms(&b));
        assert!(err_parts <= err.max(1e-6 * peak) * slack, "{policy}: segmented error {err_parts} against {err}");
        for s in &parts.segments {
            if let SegmentForm::Fdsr { layout: l, .. } = &s.form {
                let used = words(&small, &s.region, HEADER_WORDS)[layout::H_USED];
                assert!(l.used_bytes(used.into()) <= 4 * l.words, "{policy}: a segment overflows its region");
            }
        }
    }
}

#[test]
fn a_budget_below_the_metadata_is_refused_with_the_least_budget() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [2, 2, 16, 16];
    let input = storage_zeroed(&ctx, "x", 4096);
    let acc = storage_zeroed(&ctx, "acc", 16);
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let p: Policy = "fdsr:budget=0.05".parse().unwrap();
    match record_encode(&ctx, &mut enc, &input, &shape, &p, &CodecOptions::default(), Category::Workspace, &acc) {
        Err(FdsrError::BudgetTooLow { needed, .. }) => {
            let l = FdsrLayout::for_budget(4, 16, 1024, needed + 1e-9).expect("the named budget fits");
            assert!(l.limit_bits() >= 16);
        }
        other => panic!("expected BudgetTooLow, got {:?}", other.map(|r| r.reserved_bytes())),
    }
}

/// The blocks' offsets (one per 256 tiles, scanned on the device in runs of blocks per lane) are
/// the host's prefix of the tile sizes, here with 313 blocks (more than the scan's 256 lanes),
/// and the tiles they place decode as the reference decodes: placed by the allocation on the
/// device path, by `finish_segment` on the file path.
#[test]
fn block_offsets_are_the_host_prefix_beyond_one_block_per_lane() {
    let Some(ctx) = common::gpu() else { return };
    let shape = [2, 40_000, 8, 8];
    let mut x = relu_activation(shape, 3);
    // Every fifth tile zero and every seventh flat: all three stored classes in every block.
    for (t, tile) in x.chunks_mut(64).enumerate() {
        if t % 5 == 0 {
            tile.fill(0.0);
        } else if t % 7 == 0 {
            tile.fill(0.5);
        }
    }
    let opts = CodecOptions { seed: 2, ..Default::default() };
    let policy = "fdsr:bits=8,4,3,2";
    let (r, y) = round_trip(&ctx, &x, &shape, policy, &opts);
    let s = &r.segments[0];
    let SegmentForm::Fdsr { layout: l, .. } = &s.form else { panic!("not fdsr") };
    assert_eq!(l.pay_off - l.blk_off, 313);
    let w = words(&ctx, &s.region, l.pay_off);
    let sizes = &w[layout::H_CLASS_BITS..layout::H_CLASS_BITS + 4];
    let mut at = 0u32;
    for b in 0..313usize {
        assert_eq!(w[l.blk_off as usize + b], at, "block {b}");
        for t in b * 256..(b * 256 + 256).min(l.tiles as usize) {
            at += sizes[((w[l.cls_off as usize + t / 16] >> (2 * (t % 16))) & 3) as usize];
        }
    }
    assert_eq!(w[layout::H_USED], at, "bits used");
    let p = policy.parse().unwrap();
    let want = reference::decompress(&reference::compress(&x, &shape, &p, &opts).unwrap()).unwrap();
    let off = differing(&y, &want, &x);
    assert!(off * 1000 <= x.len(), "{off} of {} decoded values differ from the reference", x.len());
    let file = block_on(decompress(&ctx, &block_on(compress(&ctx, &x, &shape, &p, &opts)).unwrap())).unwrap();
    let off = differing(&file, &want, &x);
    assert!(off * 1000 <= x.len(), "file path: {off} of {} decoded values differ from the reference", x.len());
}

/// What a real GPU pays per stored tensor in passes: an `fdsr` segment encodes in six dispatches
/// (analysis, allocation with the block offsets and the accounting, class and DC sections, and
/// the pack's three indirect launches, two of them empty) and decodes in one.
#[test]
fn an_fdsr_segment_encodes_in_six_dispatches_and_decodes_in_one() {
    let Some(ctx) = common::gpu() else { return };
    let (shape, opts) = ([4, 8, 32, 32], CodecOptions::default());
    let x = relu_activation(shape, 8);
    let (_, _, [encoded, decoded]) = round_trip_counted(&ctx, &x, &shape, "fdsr:budget=2,mask,grad", &opts);
    assert_eq!((encoded.dispatches, decoded.dispatches), (6, 1));
}

/// The pack launch is chosen twice: by the allocation kernel from the bits it picks (training)
/// and by the host from known bits (`PackLaunch::for_bits`, the file path). Both write the same
/// indirect grids, for every launch.
#[test]
fn the_device_picks_the_pack_launch_the_host_would() {
    use fdsr::codec::resident::fdsr::{layout as region_layout, pack_args, Job, SegmentGeom};
    let Some(ctx) = common::gpu() else { return };
    let shape = [4, 8, 32, 32];
    let input = storage_init(&ctx, "x", bytemuck::cast_slice(&relu_activation(shape, 70)));
    let tables = fdsr::codec::tables::Tables::buffer(&ctx);
    let g = SegmentGeom::new(0, 32, 32, 32);
    let mut launches = std::collections::HashSet::new();
    for policy in ["fdsr:budget=1", "fdsr:budget=4", "fdsr:bits=8,4,3,2", "fdsr:bits=8,4,3,0", "fdsr:bits=8,16,3,0"] {
        let Policy::Fdsr(cfg) = policy.parse::<Policy>().unwrap() else { unreachable!("an fdsr policy") };
        let layout = region_layout(&g, &cfg).unwrap();
        let job = Job { ctx: &ctx, tables: &tables, g, layout, cfg: &cfg, opts: &CodecOptions::default() };
        let region = storage_zeroed(&ctx, "region", layout.words * 4);
        let (stats, acc) = (storage_zeroed(&ctx, "stats", layout::STAT_WORDS * 4), storage_zeroed(&ctx, "acc", 16));
        let mut enc = ctx.device.create_command_encoder(&Default::default());
        let a = job.analyze(&mut enc, &input).unwrap();
        job.allocate(&mut enc, &a, &region, (&stats, &acc)).unwrap();
        ctx.queue.submit([enc.finish()]);
        let nb = cfg.band_edges.len() - 1;
        let bits: Vec<u8> = words(&ctx, &region, nb as u64).iter().map(|&b| b as u8).collect();
        let launch = PackLaunch::for_bits(&bits);
        launches.insert(launch);
        assert_eq!(words(&ctx, &a.pack_args, 9), pack_args(&g, launch), "{policy}: bits {bits:?}");
    }
    assert_eq!(launches.len(), PackLaunch::ALL.len(), "every launch was checked: {launches:?}");
}
