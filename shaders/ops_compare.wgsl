// Sums of the gradient-error probe (src/engine/ops/compare.rs): workgroup g adds [(c - e)^2, e^2]
// over values [g * CHUNK, (g + 1) * CHUNK) of in0 = e (exact) and in1 = c (compressed), each
// invocation every 256th value in order, then the workgroup's sum in its fixed order (the reduce
// prelude's block_sum2), into out[2 (offset + g)] and the word after it.

struct CompareParams { n: u32, offset: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<uniform> p: CompareParams;
@group(0) @binding(1) var<storage, read> in0: array<f32>;
@group(0) @binding(2) var<storage, read> in1: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const CHUNK: u32 = 4096u;

@compute @workgroup_size(256)
fn diff_sums(ids: Ids) {
    let g = ids.wg.y * ids.nwg.x + ids.wg.x;
    let end = min(p.n, (g + 1u) * CHUNK);
    var a = vec2<f32>(0.0);
    for (var i = g * CHUNK + ids.lid; i < end; i += 256u) {
        let e = in0[i];
        let d = in1[i] - e;
        a += vec2<f32>(d * d, e * e);
    }
    let s = block_sum2(a, ids);
    if (ids.lid == 0u) {
        out[2u * (p.offset + g)] = s.x;
        out[2u * (p.offset + g) + 1u] = s.y;
    }
}
