// Workgroup sums for reductions with subgroup operations (where the device has SUBGROUP): each
// subgroup adds its values with `subgroupAdd`, then every invocation adds the subgroups' sums in
// subgroup order (at most 64: subgroups have at least 4 invocations). One barrier instead of
// eight; the order is fixed by the device's subgroup layout, so results repeat bit for bit on
// one device. Same interface as `reduce_wg.wgsl`.

struct Ids {
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) sgi: u32,
    @builtin(num_subgroups) nsg: u32,
}

var<workgroup> red: array<vec2<f32>, 64>;

fn block_sum2(v: vec2<f32>, ids: Ids) -> vec2<f32> {
    let s = subgroupAdd(v);
    if (ids.sgi == 0u) { red[ids.sg] = s; }
    workgroupBarrier();
    var total = vec2<f32>(0.0);
    for (var i = 0u; i < ids.nsg; i++) { total += red[i]; }
    workgroupBarrier();
    return total;
}
