// Exclusive prefix sum of u32 (the fdsr tile blocks' bit totals -> their offsets), in blocks of 256 plus block sums.

struct ScanParams { n: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<uniform> sp: ScanParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

fn index_of(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 { return (wg.y * nwg.x + wg.x) * 256u + lid; }

// Exclusive scan within each block of 256; the block's total goes to sums[block]. One invocation
// per block walks it serially: on lavapipe this beats a shared-memory scan with barriers.
@compute @workgroup_size(64)
fn scan_blocks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let block = (wg.y * nwg.x + wg.x) * 64u + lid;
    let first = block * 256u;
    if (first >= sp.n) { return; }
    let last = min(first + 256u, sp.n);
    var acc = 0u;
    for (var i = first; i < last; i++) {
        let v = data[i];
        data[i] = acc;
        acc += v;
    }
    sums[block] = acc;
}

// data[i] += sums[block of i] (sums already scanned).
@compute @workgroup_size(256)
fn add_offsets(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wg, nwg, lid);
    if (i < sp.n) { data[i] += sums[wg.y * nwg.x + wg.x]; }
}
