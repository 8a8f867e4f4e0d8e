// Batch norm 2-D over (N, H, W) per channel, forward and backward, with an optional fused ReLU
// (its 1-bit mask written by the forward, applied to the gradient by the backward). Reductions
// are split so that a large GPU has work: channel c's N·H·W values are cut into `chunks` chunks
// of `chunk`; a workgroup per (chunk, channel) writes a partial, then a workgroup per channel
// combines the partials in chunk order (deterministic, no float atomics). Statistics are exact
// two-pass within a chunk (mean, then squared deviations) and combined with Chan's formula.
// The backward's per-channel combination happens in every workgroup of its dx pass (each reads
// its channel's partials, in the same order), so it takes two passes. The forward's elementwise
// pass runs one invocation per value. Workgroup sums come from the reduce prelude
// (`block_sum2`: subgroups where the device has them, workgroup memory elsewhere).
//
// With one chunk per channel (a CPU adapter's plan, or a small tensor) the combination steps are
// skipped: bn_stats_partial writes the statistics itself and bn_backward_dx sums its channel
// itself, so the forward takes two passes and the backward one.
//
// Bindings by entry point (src1 and dst1 hold u32 words; floats pass through them as bits):
//   entry                       x   src0   src1   src2   src3   dst0   dst1    dst2
//   bn_stats_partial            x   -      -      -      -      part   -       -
//   bn_stats_partial, 1 chunk   x   -      -      -      gamma  stats  rmean   rvar
//   bn_stats_finish             -   part   -      -      gamma  stats  rmean   rvar
//   bn_eval_stats               -   rmean  rvar   -      gamma  stats  -       -
//   bn_apply                    x   -      beta   stats  -      y      mask    -
//   bn_apply, re-apply          x   -      mask   stats  beta   y      -       -
//   bn_apply, IN_PLACE re-apply -   -      mask   stats  beta   x→y    -       -
//   bn_backward_partial         x   dy     mask   stats  -      part   -       -
//   bn_backward_dx              x   dy     mask   stats  part   dx     dgamma  dbeta
//   bn_backward_dx, IN_PLACE    x   -      mask   stats  part   dy→dx  dgamma  dbeta
// stats = [mean[C], invstd[C], gamma[C]] (gamma as the forward used it: the backward needs only
// these); part[2 (c chunks + j) ..] = the pair of chunk j of channel c.

struct BnParams {
    c: u32, hw: u32, m: u32, total: u32,
    momentum: f32, eps: f32, unbias: f32, relu: u32,
    chunk: u32, chunks: u32, _a: u32, _b: u32,
}

@group(0) @binding(0) var<uniform> p: BnParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> src0: array<f32>;
@group(0) @binding(3) var<storage, read> src1: array<u32>;
@group(0) @binding(4) var<storage, read> src2: array<f32>;
@group(0) @binding(5) var<storage, read> src3: array<f32>;
@group(0) @binding(6) var<storage, read_write> dst0: array<f32>;
@group(0) @binding(7) var<storage, read_write> dst1: array<u32>;
@group(0) @binding(8) var<storage, read_write> dst2: array<f32>;

var<workgroup> words: array<atomic<u32>, 8>;

// Index of the m-th value (over N, H, W) of channel c.
fn at(c: u32, m: u32) -> u32 {
    return ((m / p.hw) * p.c + c) * p.hw + m % p.hw;
}

fn flat(ids: Ids) -> u32 {
    return (ids.wg.y * ids.nwg.x + ids.wg.x) * 256u + ids.lid;
}

// Values [begin, end) of chunk j.
fn chunk_range(j: u32) -> vec2<u32> {
    let b = j * p.chunk;
    return vec2<u32>(b, min(p.m, b + p.chunk));
}

// Set for the dx pass that overwrites dy (in dst0) with dx, and for a re-apply that overwrites
// its input (in dst0) with y: each value is read before it is written, by the invocation that
// writes it.
override IN_PLACE: bool = false;

// The gradient at value i: dy where the ReLU mask (src1) is set, when the ReLU is fused.
fn grad(i: u32) -> f32 {
    var g: f32;
    if (IN_PLACE) { g = dst0[i]; } else { g = src0[i]; }
    if (p.relu == 0u) { return g; }
    return select(0.0, g, ((src1[i >> 5u] >> (i & 31u)) & 1u) == 1u);
}

// Chunk wg.x of channel wg.y: its mean and sum of squared deviations.
@compute @workgroup_size(256)
fn bn_stats_partial(ids: Ids) {
    let c = ids.wg.y;
    let r = chunk_range(ids.wg.x);
    var s = 0.0;
    for (var m = r.x + ids.lid; m < r.y; m += 256u) { s += x[at(c, m)]; }
    let mu = block_sum2(vec2<f32>(s, 0.0), ids).x / f32(r.y - r.x);
    var q = 0.0;
    for (var m = r.x + ids.lid; m < r.y; m += 256u) {
        let d = x[at(c, m)] - mu;
        q += d * d;
    }
    let m2 = block_sum2(vec2<f32>(q, 0.0), ids).x;
    if (ids.lid == 0u) {
        if (p.chunks == 1u) {
            finish_stats(c, mu, m2 / f32(p.m));
        } else {
            let o = 2u * (c * p.chunks + ids.wg.x);
            dst0[o] = mu;
            dst0[o + 1u] = m2;
        }
    }
}

// Channel c's statistics from its mean and biased variance; the running statistics move by the
// momentum.
fn finish_stats(c: u32, mean: f32, var_b: f32) {
    dst0[c] = mean;
    dst0[p.c + c] = 1.0 / sqrt(var_b + p.eps);
    dst0[2u * p.c + c] = src3[c];
    dst1[c] = bitcast<u32>((1.0 - p.momentum) * bitcast<f32>(dst1[c]) + p.momentum * mean);
    dst2[c] = (1.0 - p.momentum) * dst2[c] + p.momentum * (var_b * p.unbias);
}

// Channel wg.x: mean and invstd from its chunks (one per invocation, at most 256).
@compute @workgroup_size(256)
fn bn_stats_finish(ids: Ids) {
    let c = ids.wg.x;
    var n = 0.0;
    var mu = 0.0;
    var m2 = 0.0;
    if (ids.lid < p.chunks) {
        let r = chunk_range(ids.lid);
        let o = 2u * (c * p.chunks + ids.lid);
        n = f32(r.y - r.x);
        mu = src0[o];
        m2 = src0[o + 1u];
    }
    let mean = block_sum2(vec2<f32>(n * mu, 0.0), ids).x / f32(p.m);
    let d = mu - mean;
    let var_b = block_sum2(vec2<f32>(m2 + n * d * d, 0.0), ids).x / f32(p.m);
    if (ids.lid == 0u) { finish_stats(c, mean, var_b); }
}

// Eval mode: mean and invstd from the running statistics (one invocation per channel).
@compute @workgroup_size(256)
fn bn_eval_stats(ids: Ids) {
    let c = flat(ids);
    if (c >= p.c) { return; }
    dst0[c] = src0[c];
    dst0[p.c + c] = 1.0 / sqrt(bitcast<f32>(src1[c]) + p.eps);
    dst0[2u * p.c + c] = src3[c];
}

// y = gamma (x - mean) invstd + beta. relu = 1: the fused ReLU, y = max(y, 0), and its mask words
// (bit i of word j set when value 32j + i > 0, as relu_forward keeps it), gathered in workgroup
// memory. relu = 2: a saved ReLU mask re-applied (y where its bit is set, else exactly 0: the
// forward's output again from its saved input, bit for bit when that input is exact); relu = 3:
// the same with the kept values clamped at 0.
@compute @workgroup_size(256)
fn bn_apply(ids: Ids) {
    let i = flat(ids);
    let writes_mask = p.relu == 1u;
    if (writes_mask) {
        if (ids.lid < 8u) { atomicStore(&words[ids.lid], 0u); }
        workgroupBarrier();
    }
    if (i < p.total) {
        let c = (i / p.hw) % p.c;
        var v: f32;
        var beta: f32;
        if (IN_PLACE) { v = dst0[i]; } else { v = x[i]; }
        if (p.relu < 2u) { beta = bitcast<f32>(src1[c]); } else { beta = src3[c]; }
        var y = src2[2u * p.c + c] * ((v - src2[c]) * src2[p.c + c]) + beta;
        if (writes_mask) {
            let pos = y > 0.0;
            y = select(0.0, y, pos);
            if (pos) { atomicOr(&words[ids.lid / 32u], 1u << (ids.lid % 32u)); }
        } else if (p.relu >= 2u) {
            if (p.relu == 3u) { y = max(y, 0.0); }
            y = select(0.0, y, ((src1[i >> 5u] >> (i & 31u)) & 1u) == 1u);
        }
        dst0[i] = y;
    }
    if (writes_mask) {
        workgroupBarrier();
        let word = (i - ids.lid) / 32u + ids.lid;
        if (ids.lid < 8u && word * 32u < p.total) { dst1[word] = atomicLoad(&words[ids.lid]); }
    }
}

// Sums of the gradient g and of g·x̂ over chunk wg.x of channel wg.y.
fn chunk_grad_sums(ids: Ids) -> vec2<f32> {
    let c = ids.wg.y;
    let r = chunk_range(ids.wg.x);
    let mu = src2[c];
    let is = src2[p.c + c];
    var a = vec2<f32>(0.0);
    for (var m = r.x + ids.lid; m < r.y; m += 256u) {
        let i = at(c, m);
        let g = grad(i);
        a += vec2<f32>(g, g * ((x[i] - mu) * is));
    }
    return block_sum2(a, ids);
}

// Chunk wg.x of channel wg.y: its sums of g and g·x̂.
@compute @workgroup_size(256)
fn bn_backward_partial(ids: Ids) {
    let c = ids.wg.y;
    let s = chunk_grad_sums(ids);
    if (ids.lid == 0u) {
        let o = 2u * (c * p.chunks + ids.wg.x);
        dst0[o] = s.x;
        dst0[o + 1u] = s.y;
    }
}

// Chunk wg.x of channel wg.y: its channel's sums S = sum g and T = sum g·x̂ from the partials,
// or from the channel itself when it is one chunk (chunk 0's workgroup also writes them as dbeta
// and dgamma), then dx = gamma invstd (g - S / m - x̂ T / m) over the chunk.
@compute @workgroup_size(256)
fn bn_backward_dx(ids: Ids) {
    let c = ids.wg.y;
    var s: vec2<f32>;
    if (p.chunks == 1u) {
        s = chunk_grad_sums(ids);
    } else {
        var v = vec2<f32>(0.0);
        if (ids.lid < p.chunks) {
            let o = 2u * (c * p.chunks + ids.lid);
            v = vec2<f32>(src3[o], src3[o + 1u]);
        }
        s = block_sum2(v, ids);
    }
    if (ids.wg.x == 0u && ids.lid == 0u) {
        dst1[c] = bitcast<u32>(s.y);
        dst2[c] = s.x;
    }
    let mu = src2[c];
    let is = src2[p.c + c];
    let k = src2[2u * p.c + c] * is;
    let inv_m = 1.0 / f32(p.m);
    let r = chunk_range(ids.wg.x);
    for (var m = r.x + ids.lid; m < r.y; m += 256u) {
        let i = at(c, m);
        dst0[i] = k * (grad(i) - s.x * inv_m - (x[i] - mu) * is * (s.y * inv_m));
    }
}
