// Workgroup sums for reductions, through workgroup memory: the fallback where the device has no
// subgroup operations. Entry points of reducing shaders take `ids: Ids` and call `block_sum2`
// from uniform control flow; every invocation gets the sum over the 256 of its workgroup, added
// in a fixed tree (deterministic). `reduce_sg.wgsl` is the same interface with subgroups.

struct Ids {
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
}

var<workgroup> red: array<vec2<f32>, 256>;

fn block_sum2(v: vec2<f32>, ids: Ids) -> vec2<f32> {
    red[ids.lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (ids.lid < s) { red[ids.lid] += red[ids.lid + s]; }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}
