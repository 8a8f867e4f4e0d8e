//! Unit tests of the budget controller: how it follows the gradient error, allocates, and
//! saves its state.

use super::*;
use crate::codec::alloc::{coherent_weight_at, AllocWeights, FdsrStats};
use crate::codec::config::DEFAULT_DROP_WEIGHT;

fn record(name: &str, numel: u64, scale: f64) -> TensorRecord {
    let mut a = FdsrStats::new(&[0, 1, 6, 28, 64]);
    a.numel = numel;
    a.planes = numel / 64;
    a.full_tiles = numel / 64;
    for j in 1..4 {
        a.band_sum_n_max2[j] = scale * (numel as f64) / j as f64;
        a.band_energy[j] = scale * (numel as f64) / (4 * j) as f64;
    }
    a.dc_sum_n_max2 = scale * numel as f64;
    a.gmax = 1.0;
    TensorRecord {
        name: name.into(),
        layer: 0,
        shape: vec![numel as usize / 64, 1, 8, 8],
        fp32_bytes: numel * 4,
        stored_bytes: 0,
        reserved_bytes: 0,
        form: "fdsr".into(),
        bits: vec![],
        classes: [0; 4],
        band_energy: vec![],
        reuse_hits: 0,
        reuse_eligible: 0,
        derived_from: None,
        budget: Some(2.0),
        own_mask: false,
        masked: false,
        analysis: Some(a),
    }
}

fn controller(policy: &str) -> Controller {
    let p: Policy = policy.parse().unwrap();
    Controller::for_policy(Some(&p), ControllerConfig::default()).unwrap().unwrap()
}

#[test]
fn only_auto_moves_the_total_with_the_gradient_error() {
    let recs = [record("conv1.input", 64 * 64, 1.0)];
    let big = GradPair { name: "conv1.weight".into(), diff2: 1.0, norm2: 1.0 };
    let small = GradPair { name: "conv1.weight".into(), diff2: 1e-4, norm2: 1.0 };
    // A budget is a bound: the average stays the plan's whatever the error.
    let mut fixed = controller("fdsr:budget=2,realloc");
    assert_eq!(fixed.update(9, std::slice::from_ref(&big), &recs, 1.75).budget, Some(1.75));
    assert_eq!(fixed.update(19, std::slice::from_ref(&small), &recs, 1.75).budget, Some(1.75));
    // `,auto` follows the error from the plan's average.
    let mut c = controller("fdsr:budget=2,auto");
    assert_eq!(c.update(9, &[big], &recs, 2.0).budget, Some(2.5));
    let d = c.update(19, std::slice::from_ref(&small), &recs, 2.0);
    assert!((d.budget.unwrap() - 2.5 / 1.1).abs() < 1e-12, "{d:?}");
    let mid = GradPair { name: "conv1.weight".into(), diff2: 0.04, norm2: 1.0 };
    assert_eq!(c.update(29, &[mid], &recs, 2.0).budget, d.budget);
    assert_eq!(c.take_decisions().len(), 3);
    assert!(c.take_decisions().is_empty());
    for _ in 0..40 {
        c.update(0, std::slice::from_ref(&small), &recs, 2.0);
    }
    assert_eq!(c.budget, Some(ControllerConfig::default().min_budget));
}

#[test]
fn the_allocation_favours_sensitive_tensors_and_keeps_the_average() {
    let recs = [record("conv1.input", 64 * 64, 1.0), record("conv2.input", 64 * 64, 1.0)];
    let mut c = controller("fdsr:budget=3,realloc");
    let grads = [
        GradPair { name: "conv1.weight".into(), diff2: 0.04, norm2: 1.0 },
        GradPair { name: "conv2.weight".into(), diff2: 0.0004, norm2: 1.0 },
    ];
    let d = c.update(9, &grads, &recs, 3.0);
    let b: HashMap<_, _> = d.budgets.into_iter().collect();
    assert!(b["conv1.input"] > b["conv2.input"], "{b:?}");
    assert!((b["conv1.input"] + b["conv2.input"]) / 2.0 <= d.budget.unwrap() + 1e-9, "{b:?}");
}

#[test]
fn sensitivity_counts_well_beyond_twice_the_median() {
    // Equal tensors; conv1's weight error against conv2's at 4x and at 100x the sensitivity.
    // A clamp at x2 of the median made both the same allocation.
    let recs = [record("conv1.input", 64 * 64, 1.0), record("conv2.input", 64 * 64, 1.0)];
    let pair = |name: &str, diff2: f64| GradPair { name: name.into(), diff2, norm2: 1.0 };
    let conv1 = |ratio: f64| {
        let grads = [pair("conv1.weight", 0.0004 * ratio), pair("conv2.weight", 0.0004)];
        let d = controller("fdsr:budget=3,realloc").update(9, &grads, &recs, 3.0);
        let b: HashMap<_, _> = d.budgets.into_iter().collect();
        assert!((b["conv1.input"] + b["conv2.input"]) / 2.0 <= 3.0 + 1e-9, "{b:?}");
        b["conv1.input"]
    };
    let (some, much) = (conv1(4.0), conv1(100.0));
    assert!(some > 3.0 && much > some, "conv1's budget at 4x: {some}, at 100x: {much}");
}

#[test]
fn a_tensor_others_are_recomputed_from_answers_for_their_errors_too() {
    // Equal tensors and equal errors of their own weights; conv3's input is recomputed from
    // bn1's, so bn1's codec error also reaches conv3's gradient.
    let mut derived = TensorRecord::kept("conv3.input", 1, &[1, 1, 64, 64], 64 * 64 * 4, "derived");
    derived.derived_from = Some("bn1.input".into());
    // (bn2 first: between equals the first takes a level left over.)
    let recs = [record("bn2.input", 64 * 64, 1.0), record("bn1.input", 64 * 64, 1.0), derived];
    let pair = |name: &str, diff2: f64| GradPair { name: name.into(), diff2, norm2: 1.0 };
    let grads = [pair("bn1.weight", 0.01), pair("bn2.weight", 0.01), pair("conv3.weight", 0.04)];
    let b: HashMap<_, _> =
        controller("fdsr:budget=3,realloc").update(9, &grads, &recs, 3.0).budgets.into_iter().collect();
    assert!(b["bn1.input"] > b["bn2.input"], "{b:?}");
    assert!(!b.contains_key("conv3.input"), "nothing stored, no budget: {b:?}");
}

#[test]
fn state_round_trips_and_checks_the_configuration() {
    let recs = [record("conv1.input", 64 * 64, 1.0), record("conv2.input", 64 * 64, 2.0)];
    let mut c = controller("fdsr:budget=2,realloc");
    c.update(9, &[GradPair { name: "conv1.weight".into(), diff2: 0.5, norm2: 1.0 }], &recs, 2.0);
    let mut d = controller("fdsr:budget=2,realloc");
    d.restore(&c.state()).unwrap();
    assert_eq!((d.budget, d.budgets()), (c.budget, c.budgets()));
    let mut other = Controller::for_policy(
        Some(&"fdsr:budget=2,realloc".parse().unwrap()),
        ControllerConfig { every: 7, ..ControllerConfig::default() },
    )
    .unwrap()
    .unwrap();
    assert!(other.restore(&c.state()).is_err());
    assert!(d.restore("1,2;x").is_err());
}

#[test]
fn only_budgeted_fdsr_with_realloc_adapts() {
    let cfg = ControllerConfig::default();
    let recs = [record("conv1.input", 64 * 64, 1.0)];
    for p in ["uniform:2", "fdsr:bits=8,4,2,0", "division", "fdsr:budget=2,mask,grad"] {
        let mut c = Controller::for_policy(Some(&p.parse().unwrap()), cfg).unwrap().unwrap();
        assert!(!c.adaptive(), "{p}");
        let d = c.update(9, &[GradPair { name: "conv1.weight".into(), diff2: 1.0, norm2: 1.0 }], &recs, 2.0);
        assert_eq!((d.grad_error, d.budget, d.budgets.len()), (1.0, None, 0), "{p}");
    }
    for p in ["fdsr:ratio=16,mask,grad,realloc", "fdsr:budget=2,auto"] {
        assert!(Controller::for_policy(Some(&p.parse().unwrap()), cfg).unwrap().unwrap().adaptive(), "{p}");
    }
    for p in [None, Some("lossless".parse().unwrap())] {
        assert!(Controller::for_policy(p.as_ref(), cfg).unwrap().is_none());
    }
    assert!(Controller::for_policy(None, ControllerConfig { low: 0.5, high: 0.1, ..cfg }).is_err());
}

#[test]
fn each_level_takes_the_weights_the_policy_gives_its_budget() {
    // Energies far under the range bound, as in real activations: a band may be dropped.
    let mut a = record("x", 1 << 14, 1.0).analysis.unwrap();
    for j in 1..4 {
        a.band_energy[j] = a.band_sum_n_max2[j] / (64 << (2 * j)) as f64;
    }
    a.set_weights(AllocWeights { dc: 8.0, dropped: 8.0 });
    // All levels at once (as the controller asks), each as if asked alone; one too small.
    let budgets = [1.5, 2.5, 3.0, 4.0, 5.0, 2.25, 3.25, 2.75, 0.01];
    let cfg = |p: &str| controller(p).fdsr.expect("a reallocating fdsr policy");
    let (grad, old) = (cfg("fdsr:budget=2,mask,grad,realloc"), cfg("fdsr:budget=2,mask,grad,drop=dc,realloc"));
    let (follows, follows_both, own) =
        (level_bits(&a, Some(&grad), &budgets), level_bits(&a, Some(&old), &budgets), level_bits(&a, None, &budgets));
    for (i, &b) in budgets.iter().enumerate() {
        let at = |dropped: f64| {
            let mut at = FdsrStats { coherent_weight: f64::from(coherent_weight_at(b)), ..a.clone() };
            at.dropped_weight = dropped;
            choose_bits(&at, b).ok()
        };
        assert_eq!(follows[i], at(f64::from(DEFAULT_DROP_WEIGHT)), "{b}");
        assert_eq!(follows_both[i], at(f64::from(coherent_weight_at(b))), "{b}");
        assert_eq!(own[i], choose_bits(&a, b).ok(), "{b}");
    }
    assert_eq!(follows[8], None);
    // The weights matter at some level here, else the test above could not tell them apart.
    assert!(follows != follows_both && follows_both != own);
    // Only reallocating policies share budgets out, and only they carry their weights.
    assert!(Controller::for_policy(Some(&"fdsr:budget=2,mask,grad".parse().unwrap()), ControllerConfig::default())
        .unwrap()
        .is_some_and(|c| c.fdsr.is_none()));
}

#[test]
fn a_step_that_gains_nothing_does_not_hide_the_gain_behind_it() {
    // `a` gains nothing until its third level, then much; `b` gains a little at every level.
    let item = |name, errors: [f64; 4]| Item { name, numel: 1.0, errors: errors.map(Some).to_vec() };
    let items = [item("a", [10.0, 10.0, 10.0, 1.0]), item("b", [10.0, 9.0, 8.0, 7.0])];
    let mut at = [0, 0];
    let spent = spend(&items, &[1.0, 1.0], &[1.0, 2.0, 3.0, 4.0], &mut at, 3, 5.0);
    assert_eq!(at, [3, 0], "three levels for a take its error from 10 to 1, for b from 10 to 7");
    assert_eq!(spent, 5.0);
}
