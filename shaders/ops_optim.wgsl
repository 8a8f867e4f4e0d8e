// Optimizer steps over one tensor, one invocation per element (PyTorch semantics): SGD with
// momentum / Nesterov / L2 weight decay, and AdamW with decoupled weight decay and bias-corrected
// moments (the corrections are computed on the host). The tensor is one parameter or the arena of
// all of them (one dispatch per step): values [0, decayed) take the weight decay, the rest a
// decay of 0 (biases and batch-norm parameters, laid out after the weights).

struct OptimParams {
    n: u32, nesterov: u32, use_buf: u32, decayed: u32,
    lr: f32, momentum: f32, wd: f32, beta1: f32,
    beta2: f32, eps: f32, bc1: f32, bc2_sqrt: f32,
}

@group(0) @binding(0) var<uniform> p: OptimParams;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;

fn linear_id(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid;
}

@compute @workgroup_size(256)
fn sgd_step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    let wd = select(0.0, p.wd, i < p.decayed);
    let w = param[i];
    let g = grad[i] + wd * w;
    var d = g;
    if (p.use_buf != 0u) {
        let b = p.momentum * m[i] + g;
        m[i] = b;
        d = select(b, g + p.momentum * b, p.nesterov != 0u);
    }
    param[i] = w - p.lr * d;
}

@compute @workgroup_size(256)
fn adamw_step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = linear_id(wg, nwg, lid);
    if (i >= p.n) { return; }
    let wd = select(0.0, p.wd, i < p.decayed);
    let g = grad[i];
    let w = param[i] * (1.0 - p.lr * wd);
    let mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
    let vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    let denom = sqrt(vi) / p.bc2_sqrt + p.eps;
    param[i] = w - (p.lr / p.bc1) * mi / denom;
}
