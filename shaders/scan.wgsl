// Exclusive prefix sum of u32 (tile sizes -> bit offsets), in blocks of 256 plus block sums;
// and the class -> size map that feeds it.

struct ScanParams { n: u32, _a: u32, _b: u32, _c: u32, class_bits: vec4<u32> }

@group(0) @binding(0) var<uniform> sp: ScanParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

var<workgroup> tmp: array<u32, 256>;

fn index_of(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 { return (wg.y * nwg.x + wg.x) * 256u + lid; }

// data[i] = class_bits[data[i]] (classes in, sizes out).
@compute @workgroup_size(256)
fn class_sizes(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wg, nwg, lid);
    if (i < sp.n) { data[i] = sp.class_bits[data[i] & 3u]; }
}

// Exclusive scan within each block of 256; the block's total goes to sums[block].
@compute @workgroup_size(256)
fn scan_blocks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wg, nwg, lid);
    let v = select(0u, data[min(i, sp.n - 1u)], i < sp.n);
    tmp[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < 256u; d <<= 1u) {
        var add = 0u;
        if (lid >= d) { add = tmp[lid - d]; }
        workgroupBarrier();
        tmp[lid] += add;
        workgroupBarrier();
    }
    if (i < sp.n) { data[i] = tmp[lid] - v; }
    if (lid == 255u) { sums[wg.y * nwg.x + wg.x] = tmp[255]; }
}

// data[i] += sums[block of i] (sums already scanned).
@compute @workgroup_size(256)
fn add_offsets(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wg, nwg, lid);
    if (i < sp.n) { data[i] += sums[wg.y * nwg.x + wg.x]; }
}
