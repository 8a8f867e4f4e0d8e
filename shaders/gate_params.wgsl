// The uniform of both DFQ gate shaders (src/engine/ops/gate.rs mirrors it), prepended to them
// after rng.wgsl. Inputs n of c channels of hw values (per = c·hw values each), k options with
// forward bits fw and relative costs cost; goal is the cost target, alpha the regularizer's
// weight, tau the softmax temperature; train adds Gumbel noise from (seed, stream).

struct GateParams {
    n: u32, c: u32, hw: u32, k: u32, train: u32, seed: u32, stream: u32, per: u32,
    tau: f32, goal: f32, alpha: f32, _a: u32,
    fw: vec4<u32>,
    cost: vec4<f32>,
}
