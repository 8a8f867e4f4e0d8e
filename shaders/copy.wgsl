// Plain copy kernel: the bandwidth yardstick of the benchmarks and the lossless path.

struct CopyParams { n: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> params: CopyParams;

// One word per invocation over a 2-D grid of workgroups.
@compute @workgroup_size(256)
fn copy_words(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * nwg.x + wg.x) * 256u + lid;
    if (i < params.n) {
        dst[i] = src[i];
    }
}
