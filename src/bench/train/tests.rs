//! Tests of the training-step benchmark's report.

use super::*;
use crate::gpu::Work;

fn bench(coop: Vec<wgpu::CooperativeMatrixProperties>, timed: bool) -> TrainBench {
    let mut timings = Timings::default();
    timings.work.insert("conv_forward", Work { dispatches: 10, flops: 4e9 });
    timings.work.insert("bn_apply", Work { dispatches: 10, flops: 0.0 });
    if timed {
        timings.by_entry.insert("conv_forward", (2e6, 10));
        timings.by_entry.insert("bn_apply", (1e6, 10));
    }
    TrainBench {
        adapter: "test".into(),
        model: ModelName::Cnn,
        policy: "none".into(),
        batch: 128,
        steps: 2,
        images_per_s: 1000.0,
        step_ms: 10.0,
        record_ms: 2.5,
        submit_ms: 0.5,
        timings,
        copy_gb_s: 800.0,
        matmul_gflop_s: 4000.0,
        features: vec![("SUBGROUP", true, true), ("EXPERIMENTAL_COOPERATIVE_MATRIX", false, false)],
        subgroup_sizes: (32, 32),
        cooperative_matrix: coop,
        transfers: TransferCounts { uploaded: 4096, read_back: 2048, host_waits: 4, dispatches: 20, submits: 2 },
        compute: "compute: fp32 (no cooperative matrices: none offered)".into(),
        probe: None,
    }
}

#[test]
fn report_without_cooperative_matrices_or_timestamps() {
    let r = bench(Vec::new(), false).report();
    assert!(r.contains("cooperative-matrix configurations: none"), "{r}");
    assert!(r.starts_with("compute: fp32 (no cooperative matrices"), "{r}");
    assert!(r.contains("SUBGROUP (used), no EXPERIMENTAL_COOPERATIVE_MATRIX"), "{r}");
    assert!(r.contains("10 dispatches per step"), "{r}");
    assert!(r.contains("2.0 KiB uploaded, 1.0 KiB read back, 2.0 host waits, 1.0 submits"), "{r}");
    assert!(r.contains("host time per step: 2.50 ms recording, 0.50 ms inside queue submissions\n"), "{r}");
    assert!(r.contains("no per-kernel times") && r.contains("| conv_forward | 5 | — | — | — | — |"), "{r}");
    assert!(r.contains("step: 2.00 GFLOP, 200.00 GFLOP/s of wall time"), "{r}");
}

#[test]
fn report_with_cooperative_matrices_and_timestamps() {
    let c = wgpu::CooperativeMatrixProperties {
        m_size: 16,
        n_size: 16,
        k_size: 16,
        ab_type: wgpu::CooperativeScalarType::F16,
        cr_type: wgpu::CooperativeScalarType::F32,
        saturating_accumulation: false,
    };
    let r = bench(vec![c, c], true).report();
    assert!(r.contains("configurations: 16x16x16 F16·F16 → F32; 16x16x16"), "{r}");
    // 4 GFLOP over 2 ms of conv_forward: 2000 GFLOP/s, half the matmul rate.
    assert!(r.contains("| conv_forward | 5 | 1.00 | 66.7% | 2000.00 | 50% |"), "{r}");
    assert!(r.contains("| bn_apply | 5 | 0.50 | 33.3% | — | — |"), "{r}");
    assert!(r.contains("GFLOP/s of GPU time (33% of the matmul rate)"), "{r}");
    assert!(
        r.contains("host time per step: 2.50 ms recording, 0.50 ms inside queue submissions (the GPU's: 1.50 ms)"),
        "{r}"
    );
}

#[test]
fn a_lossy_policy_reports_its_probe_step_and_the_table_compares_with_the_first_row() {
    let none = bench(Vec::new(), true);
    let mut fdsr = bench(Vec::new(), true);
    fdsr.policy = "fdsr:ratio=16,mask,grad".into();
    fdsr.step_ms = 11.5;
    fdsr.images_per_s = 128.0 / 0.0115;
    let transfers = TransferCounts { uploaded: 0, read_back: 1536, host_waits: 2, dispatches: 300, submits: 5 };
    fdsr.probe = Some(ProbeStep { ms: 23.0, transfers });
    let r = fdsr.report();
    assert!(r.contains("policy fdsr:ratio=16,mask,grad: 11130.4 images/s, 11.5 ms per step"), "{r}");
    assert!(r.contains("probe step: 23.0 ms (2.00x a step), 300 dispatches, 1.5 KiB read back, 2 host waits"), "{r}");
    assert!(!none.report().contains("probe step"));
    let t = side_by_side(&[none, fdsr]);
    assert!(t.contains("| none | 1000.0 | 10.00 | 1.00 | 10 | 1.50 | — |"), "{t}");
    assert!(t.contains("| fdsr:ratio=16,mask,grad | 11130.4 | 11.50 | 1.15 | 10 | 1.50 | 23.0 |"), "{t}");
}
