// The bit offsets of an fdsr segment's tiles, which the encoder's pack and the decoder share (a
// tile's size depends only on its class). `scan_tiles` walks each block of 256 tiles in order:
// work[t] = the bits of the block's tiles before t, work[p.sums_at + block] = the block's total,
// which shaders/scan.wgsl then scans into the block's offset. Prepended to both; each declares
// `p` (tiles, sums_at), `work`, `tile_class` and `class_size`.

// Tile t's bit offset in the payload.
fn tile_offset(t: u32) -> u32 { return work[t] + work[p.sums_at + (t >> 8u)]; }

// One invocation per block of 256 tiles (serially: on lavapipe this beats a workgroup scan).
@compute @workgroup_size(64)
fn scan_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let block = group_index(wg, nwg) * 64u + lid;
    let first = block * 256u;
    if (first >= p.tiles) { return; }
    let last = min(first + 256u, p.tiles);
    let sizes = vec4<u32>(class_size(0u), class_size(1u), class_size(2u), class_size(3u));
    var acc = 0u;
    for (var t = first; t < last; t++) {
        let c = tile_class(t);
        work[t] = acc;
        acc += sizes[c];
    }
    work[p.sums_at + block] = acc;
}
