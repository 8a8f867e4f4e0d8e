//! Reference batch norm 2-D (training and eval forward, backward) and optimizer steps: the oracle
//! of `shaders/ops_bn.wgsl` and `shaders/ops_optim.wgsl`. Batch norm accumulates in f64.

/// Added to the variance before the inverse square root.
pub const BN_EPS: f32 = 1e-5;
/// Weight of the new batch statistic in the running statistics (PyTorch's default).
pub const BN_MOMENTUM: f32 = 0.1;

/// SGD hyper-parameters (torch.optim.SGD, dampening 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdParams {
    /// Learning rate.
    pub lr: f32,
    /// Momentum (0 for plain SGD).
    pub momentum: f32,
    /// L2 weight decay added to the gradient.
    pub weight_decay: f32,
    /// Nesterov momentum.
    pub nesterov: bool,
}

/// AdamW hyper-parameters (torch.optim.AdamW).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamParams {
    /// Learning rate.
    pub lr: f32,
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Denominator ε.
    pub eps: f32,
    /// Decoupled weight decay.
    pub weight_decay: f32,
    /// Step number, 1-based.
    pub step: u32,
}

/// Batch norm state of one layer on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct BnRef {
    /// Scale `[c]`.
    pub gamma: Vec<f32>,
    /// Shift `[c]`.
    pub beta: Vec<f32>,
    /// Running mean `[c]`.
    pub running_mean: Vec<f32>,
    /// Running unbiased variance `[c]`.
    pub running_var: Vec<f32>,
}

fn at(shape: [usize; 4], ch: usize, m: usize) -> usize {
    let [_, c, h, w] = shape;
    ((m / (h * w)) * c + ch) * h * w + m % (h * w)
}

/// Training forward of `x [n, c, h, w]`: `(y, batch mean, invstd)`; updates the running stats.
pub fn batchnorm_train_forward(x: &[f32], shape: [usize; 4], bn: &mut BnRef) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let [n, c, h, w] = shape;
    let m = n * h * w;
    let (mut mean, mut invstd) = (vec![0f32; c], vec![0f32; c]);
    for ch in 0..c {
        let mu = (0..m).map(|j| f64::from(x[at(shape, ch, j)])).sum::<f64>() / m as f64;
        let var = (0..m).map(|j| (f64::from(x[at(shape, ch, j)]) - mu).powi(2)).sum::<f64>() / m as f64;
        mean[ch] = mu as f32;
        invstd[ch] = (1.0 / (var + f64::from(BN_EPS)).sqrt()) as f32;
        let mom = f64::from(BN_MOMENTUM);
        bn.running_mean[ch] = ((1.0 - mom) * f64::from(bn.running_mean[ch]) + mom * mu) as f32;
        let unbiased = var * m as f64 / (m as f64 - 1.0);
        bn.running_var[ch] = ((1.0 - mom) * f64::from(bn.running_var[ch]) + mom * unbiased) as f32;
    }
    (apply(x, shape, bn, &mean, &invstd), mean, invstd)
}

/// Eval forward with the running statistics.
pub fn batchnorm_eval_forward(x: &[f32], shape: [usize; 4], bn: &BnRef) -> Vec<f32> {
    let invstd: Vec<f32> =
        bn.running_var.iter().map(|&v| (1.0 / (f64::from(v) + f64::from(BN_EPS)).sqrt()) as f32).collect();
    apply(x, shape, bn, &bn.running_mean, &invstd)
}

fn apply(x: &[f32], [_, c, h, w]: [usize; 4], bn: &BnRef, mean: &[f32], invstd: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = i / (h * w) % c;
            let xh = (f64::from(v) - f64::from(mean[ch])) * f64::from(invstd[ch]);
            (f64::from(bn.gamma[ch]) * xh + f64::from(bn.beta[ch])) as f32
        })
        .collect()
}

/// Backward of [`batchnorm_train_forward`]: `(dx, dgamma, dbeta)`.
pub fn batchnorm_backward(
    dy: &[f32],
    x: &[f32],
    shape: [usize; 4],
    mean: &[f32],
    invstd: &[f32],
    gamma: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let [n, c, h, w] = shape;
    let m = n * h * w;
    let (mut dgamma, mut dbeta) = (vec![0f32; c], vec![0f32; c]);
    let mut dx = vec![0f32; x.len()];
    for ch in 0..c {
        let (mu, is) = (f64::from(mean[ch]), f64::from(invstd[ch]));
        let xh = |j: usize| (f64::from(x[at(shape, ch, j)]) - mu) * is;
        let db: f64 = (0..m).map(|j| f64::from(dy[at(shape, ch, j)])).sum();
        let dg: f64 = (0..m).map(|j| f64::from(dy[at(shape, ch, j)]) * xh(j)).sum();
        for j in 0..m {
            let i = at(shape, ch, j);
            let v = f64::from(gamma[ch]) * is * (f64::from(dy[i]) - db / m as f64 - xh(j) * dg / m as f64);
            dx[i] = v as f32;
        }
        dgamma[ch] = dg as f32;
        dbeta[ch] = db as f32;
    }
    (dx, dgamma, dbeta)
}

/// One SGD step in place (f32, the kernel's order of operations); `buf` is used when
/// `momentum != 0`.
pub fn sgd_step(param: &mut [f32], grad: &[f32], buf: &mut [f32], h: SgdParams) {
    for i in 0..param.len() {
        let g = grad[i] + h.weight_decay * param[i];
        let mut d = g;
        if h.momentum != 0.0 {
            let b = h.momentum * buf[i] + g;
            buf[i] = b;
            d = if h.nesterov { g + h.momentum * b } else { b };
        }
        param[i] -= h.lr * d;
    }
}

/// One AdamW step in place (torch.optim.AdamW, f32).
pub fn adamw_step(param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32], h: AdamParams) {
    let step = i32::try_from(h.step).unwrap_or(i32::MAX);
    let bc1 = (1.0 - f64::from(h.beta1).powi(step)) as f32;
    let bc2_sqrt = (1.0 - f64::from(h.beta2).powi(step)).sqrt() as f32;
    for i in 0..param.len() {
        let g = grad[i];
        let w = param[i] * (1.0 - h.lr * h.weight_decay);
        m[i] = h.beta1 * m[i] + (1.0 - h.beta1) * g;
        v[i] = h.beta2 * v[i] + (1.0 - h.beta2) * g * g;
        let denom = v[i].sqrt() / bc2_sqrt + h.eps;
        param[i] = w - (h.lr / bc1) * m[i] / denom;
    }
}
