// fdsr similarity reuse (docs/CODEC.md, "Similarity reuse"): per full tile a key (SimHash of the
// leading AC zig-zag coefficients + a DC magnitude key), an open-addressing hash table keyed by the exact
// key whose slot keeps the lowest claiming tile (atomicMin), and verification against it.
// Rounds of reuse_clear, reuse_claim, reuse_verify; the result does not depend on the race. The
// bits and e0 come from the segment's region header; reuse runs only where a full tile's payload
// exceeds the 32 bits a reference costs (else every tile stays distinct).

struct ReuseParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, nbands: u32, _p1: u32,
    leading: u32, sig_bits: u32, table_mask: u32, _p0: u32,
    edges: array<vec4<u32>, 3>,
}

// Up to 20 hyperplanes of 64 coefficients, H[i * 64 + z].
struct Hyper { h: array<vec4<f32>, 320> }

const UNRESOLVED: u32 = 0xffffffffu;
const DISTINCT: u32 = 0xfffffffeu;
const EMPTY: u32 = 0xffffffffu;
const MARGIN: u32 = 0x3f7ffff0u; // 1 - 2^-20

@group(0) @binding(1) var<uniform> p: ReuseParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
@group(0) @binding(3) var<uniform> hyper: Hyper;
@group(0) @binding(4) var<storage, read_write> classes: array<u32>;
// Per plane of the chunk: the bits of its max |DC| (the DC scale code's input).
@group(0) @binding(5) var<storage, read> plane_dcmax: array<u32>;
// Slot i: key at 2i, lowest claiming tile at 2i + 1; after the slots: candidates, hits.
@group(0) @binding(6) var<storage, read_write> table: array<atomic<u32>>;
// Tile t: key at 3t, slot at 3t + 1, state at 3t + 2 (UNRESOLVED, DISTINCT or the representative).
@group(0) @binding(7) var<storage, read_write> tile_state: array<u32>;
// The segment's region: only its header is read (bits per band at 0, e0 at 8, class sizes at 9).
@group(0) @binding(8) var<storage, read> region: array<u32>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return region[i]; }
fn header_e0() -> i32 { return bitcast<i32>(region[8u]); }
// A reference (32 bits) is worth storing only where a full tile costs more.
fn worthwhile() -> bool { return region[9u + 2u] > 32u; }
fn hyper_at(i: u32) -> f32 { return hyper.h[i >> 2u][i & 3u]; }

// Zig-zag coefficients of tile t (edge-replicated), the same DCT as the packer's.
fn tile_coefs(t: u32) -> array<f32, 64> { return zigzag_order(dct_forward(load_tile(t))); }

// Key of every full tile; every other tile is DISTINCT from the start.
@compute @workgroup_size(64)
fn reuse_keys(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles) { return; }
    tile_state[3u * t + 1u] = EMPTY;
    if (classes[t] != 2u || !worthwhile()) {
        tile_state[3u * t] = 0u;
        tile_state[3u * t + 2u] = DISTINCT;
        return;
    }
    let c = tile_coefs(t);
    var sig = 0u;
    for (var i = 0u; i < p.sig_bits; i++) {
        var acc = 0.0;
        for (var z = 1u; z <= p.leading; z++) { acc = acc + hyper_at(i * 64u + z) * c[z]; }
        if (acc > 0.0) { sig |= 1u << i; }
    }
    tile_state[3u * t] = sig | (((bitcast<u32>(abs(c[0])) >> 19u) & 0xfffu) << 20u);
    tile_state[3u * t + 2u] = UNRESOLVED;
}

@compute @workgroup_size(64)
fn reuse_clear(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * 64u + lid;
    if (i > p.table_mask) { return; }
    atomicStore(&table[2u * i], EMPTY);
    atomicStore(&table[2u * i + 1u], 0xffffffffu);
}

// Every unresolved tile finds or inserts its key (linear probing) and lowers the slot's minimum.
@compute @workgroup_size(64)
fn reuse_claim(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles || tile_state[3u * t + 2u] != UNRESOLVED) { return; }
    let key = tile_state[3u * t];
    var h = hash32(key) & p.table_mask;
    tile_state[3u * t + 1u] = EMPTY;
    // The table has at least twice as many slots as tiles; the bound only guards spurious failures.
    for (var i = 0u; i < 4u * (p.table_mask + 1u); i++) {
        let r = atomicCompareExchangeWeak(&table[2u * h], EMPTY, key);
        if (r.exchanged || r.old_value == key) {
            atomicMin(&table[2u * h + 1u], t);
            tile_state[3u * t + 1u] = h;
            return;
        }
        if (r.old_value != EMPTY) { h = (h + 1u) & p.table_mask; }
    }
}

// docs/CODEC.md verification of tile coefficients ct against representative s's cs.
fn verify(ct: ptr<function, array<f32, 64>>, cs: ptr<function, array<f32, 64>>, s: u32) -> bool {
    let margin = bitcast<f32>(MARGIN);
    for (var b = 0u; b < p.nbands; b++) {
        let bits = band_bits(b);
        if (bits == 0u) { continue; }
        if (bits == 16u) {
            for (var z = edge(b); z < edge(b + 1u); z++) {
                if (f16_bits((*ct)[z]) != f16_bits((*cs)[z])) { return false; }
            }
            continue;
        }
        var m = bitcast<f32>(plane_dcmax[s / p.tiles_per_plane]);
        if (b > 0u) {
            m = 0.0;
            for (var z = edge(b); z < edge(b + 1u); z++) { m = max(m, abs((*cs)[z])); }
        }
        let code = select(encode_scale(m, header_e0()), ac_scale_code(encode_ac_scale(m, header_e0())), b > 0u);
        let tol = select(scale_value(code, header_e0()), 0.0, code == 0u) * margin;
        let l = f32((1u << bits) - 1u);
        for (var z = edge(b); z < edge(b + 1u); z++) {
            if (abs((*ct)[z] - (*cs)[z]) * l > tol) { return false; }
        }
    }
    return true;
}

// The lowest claimant of a slot becomes DISTINCT; the others verify against it.
@compute @workgroup_size(64)
fn reuse_verify(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * 64u + lid;
    if (t >= p.tiles || tile_state[3u * t + 2u] != UNRESOLVED) { return; }
    let slot = tile_state[3u * t + 1u];
    if (slot == EMPTY) { return; }
    let s = atomicLoad(&table[2u * slot + 1u]);
    if (s == t) {
        tile_state[3u * t + 2u] = DISTINCT;
        return;
    }
    let counters = 2u * (p.table_mask + 1u);
    atomicAdd(&table[counters], 1u);
    var ct = tile_coefs(t);
    var cs = tile_coefs(s);
    if (verify(&ct, &cs, s)) {
        tile_state[3u * t + 2u] = s;
        classes[t] = 3u;
        atomicAdd(&table[counters + 1u], 1u);
    }
}
