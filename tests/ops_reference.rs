//! Finite-difference checks (f64 losses) of the reference backward passes of batch norm
//! (training mode), max-pool, average pool and cross-entropy: what the GPU ops are held to.

use fdsr::data::synthetic::SplitMix64;
use fdsr::reference::{nn as r, nn_train as rt};

fn rand(n: usize, seed: u64) -> Vec<f32> {
    let mut g = SplitMix64::new(seed);
    (0..n).map(|_| g.range(-1.0, 1.0)).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

/// Checks `grad` against central differences of `loss` at `x` (step `eps`), every `step`-th value.
fn check(x: &[f32], grad: &[f32], eps: f32, tol: f64, step: usize, loss: impl Fn(&[f32]) -> f64, what: &str) {
    for i in (0..x.len()).step_by(step) {
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[i] += eps;
        xm[i] -= eps;
        let fd = (loss(&xp) - loss(&xm)) / (2.0 * f64::from(eps));
        assert!((fd - f64::from(grad[i])).abs() < tol, "{what}[{i}]: fd {fd} vs {}", grad[i]);
    }
}

#[test]
fn batchnorm_backward_matches_finite_differences() {
    let s = [3, 2, 3, 4];
    let n: usize = s.iter().product();
    let x = rand(n, 1);
    let rw = rand(n, 2);
    let bn = rt::BnRef {
        gamma: vec![1.3, 0.7],
        beta: vec![0.1, -0.2],
        running_mean: vec![0.0; 2],
        running_var: vec![1.0; 2],
    };
    let loss = |x: &[f32], bn: &rt::BnRef| dot(&rt::batchnorm_train_forward(x, s, &mut bn.clone()).0, &rw);
    let (_, mean, invstd) = rt::batchnorm_train_forward(&x, s, &mut bn.clone());
    let (dx, dg, db) = rt::batchnorm_backward(&rw, &x, s, &mean, &invstd, &bn.gamma);
    check(&x, &dx, 1e-2, 2e-3, 1, |x| loss(x, &bn), "bn dx");
    check(&bn.gamma, &dg, 1e-2, 2e-3, 1, |g| loss(&x, &rt::BnRef { gamma: g.to_vec(), ..bn.clone() }), "bn dgamma");
    check(&bn.beta, &db, 1e-2, 2e-3, 1, |b| loss(&x, &rt::BnRef { beta: b.to_vec(), ..bn.clone() }), "bn dbeta");
}

#[test]
fn pool_backwards_match_finite_differences() {
    let s = [2, 3, 4, 6];
    let n: usize = s.iter().product();
    let x = rand(n, 3); // distinct values: no ties within eps
    let rw = rand(n / 4, 4);
    let (y, words) = r::maxpool2_forward(&x, s);
    assert_eq!(r::maxpool2_gather(&x, &words, s), y, "the gather at the argmax is the forward");
    let dx = r::maxpool2_backward(&rw, &words, s);
    check(&x, &dx, 1e-3, 1e-3, 1, |x| dot(&r::maxpool2_forward(x, s).0, &rw), "max-pool dx");
    let ra = rand(s[0] * s[1], 5);
    let da = r::avgpool_backward(&ra, s);
    check(&x, &da, 1e-3, 1e-3, 1, |x| dot(&r::avgpool_forward(x, s), &ra), "avg pool dx");
}

#[test]
fn cross_entropy_backward_matches_finite_differences() {
    let (b, c) = (5, 7);
    let logits: Vec<f32> = rand(b * c, 6).iter().map(|v| 3.0 * v).collect();
    let labels = [0u8, 6, 3, 3, 1];
    let (_, _, probs) = r::cross_entropy_forward(&logits, &labels, c);
    let grad = r::cross_entropy_backward(&probs, &labels, c);
    check(&logits, &grad, 1e-3, 1e-4, 1, |l| r::cross_entropy_forward(l, &labels, c).0, "ce dlogits");
}
