// fdsr bit allocation on the device (docs/CODEC.md, "Bit allocation on the device"): one
// workgroup reduces a segment's analysis (per-workgroup partials and per-plane DC maxima), picks
// the bits per band of least estimated error whose payload fits the region, and writes the
// region's header and the segment's statistics; without reuse also the blocks' bit offsets and
// the accounting (else finish_segment, after the class pass, does those).
// src/reference/device_alloc.rs mirrors every step in the same order.

struct AllocParams {
    groups: u32, planes: u32, tiles: u32, nbands: u32,
    limit_bits: u32, mode: u32, weight: f32, cls_off: u32,
    pay_off: u32, reuse: u32, blk_off: u32, pack_x: u32,
    edges: array<vec4<u32>, 3>,
    inv_l2: array<vec4<f32>, 3>, // 1 / (2^b - 1)^2 for b = 1..=8 (index b)
    fixed: array<vec4<u32>, 2>,  // the bits per band of MODE_FIXED
    drop_weight: f32,            // a dropped band's weight (weight: the DC band's)
    pad0: u32, pad1: u32, pad2: u32,
}

@group(0) @binding(0) var<uniform> p: AllocParams;
// Per analysis workgroup: 8 x sum(n*max^2), 8 x sum(coef^2), zero, dc-only, full, max |coef|.
@group(0) @binding(1) var<storage, read> partials: array<f32>;
// Per plane: the bits of max |DC|, then (at planes + plane) the non-zero tile count.
@group(0) @binding(2) var<storage, read> plane_dcmax: array<u32>;
@group(0) @binding(3) var<storage, read_write> region: array<u32>;
// The segment's statistics (src/codec/resident/layout.rs, STAT_*).
@group(0) @binding(4) var<storage, read_write> stats: array<u32>;
// Window totals of the store: used bytes (low, high word), reuse hits, reuse-eligible tiles.
@group(0) @binding(5) var<storage, read_write> acc: array<atomic<u32>>;
// The grids of the pack's three launches (src/codec/resident/segment.rs, PackLaunch and
// pack_args): pack_tiles, pack_tiles without the top AC band (where it has 0 bits) and, where an
// AC band is at 16 bits, pack_tiles_compact.
@group(0) @binding(6) var<storage, read_write> pack_args: array<u32>;

const WG: u32 = 256u;
// Bits of an AC band's scale code (shaders/common.wgsl, which this shader does not include).
const AC_SCALE_BITS: u32 = 5u;
const STATS: u32 = 20u;
const F16_ERR: f32 = 2.384185791015625e-7; // 2^-22: half an f16 ulp, squared relative
const NONE: u32 = 0xffffffffu;
const MODE_GREEDY: u32 = 0u;
const MODE_EXHAUSTIVE: u32 = 1u;
const MODE_FIXED: u32 = 2u;

var<workgroup> red: array<f32, 256>;
var<workgroup> tot: array<f32, 21>; // the 20 partial statistics, then the DC term
var<workgroup> terms: array<f32, 80>; // band j at choice c: j * 10 + c
var<workgroup> best_err: array<f32, 256>;
var<workgroup> best_size: array<u32, 257>; // place_blocks: the lanes' run offsets, then the total
var<workgroup> best_idx: array<u32, 256>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn inv_l2(b: u32) -> f32 { return p.inv_l2[b >> 2u][b & 3u]; }
// Choice c of the DC band ({1..8, 16}) and of an AC band ({0..8, 16}).
fn dc_bits(c: u32) -> u32 { return select(c + 1u, 16u, c == 8u); }
fn ac_bits(c: u32) -> u32 { return select(c, 16u, c == 9u); }
fn choice_bits(j: u32, c: u32) -> u32 { return select(ac_bits(c), dc_bits(c), j == 0u); }

fn fold(a: f32, b: f32, is_max: bool) -> f32 { return select(a + b, max(a, b), is_max); }

// Unbiased exponent of |m| (subnormals and zero: -126).
fn exp_of(m: f32) -> i32 {
    let e = i32((bitcast<u32>(m) >> 23u) & 0xffu);
    return select(e - 127, -126, e == 0);
}

// Sums (or max-es) red[0..256] by the pairwise tree of strides 128, ..., 1 into red[0].
fn tree(lid: u32, is_max: bool) {
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) { red[lid] = fold(red[lid], red[lid + stride], is_max); }
        workgroupBarrier();
    }
}

// Payload bits per full tile of AC band j at b bits: its scale code (none at 16 bits), its codes.
fn ac_band_bits(j: u32, b: u32) -> u32 {
    if (b == 0u) { return 0u; }
    return select(AC_SCALE_BITS, 0u, b == 16u) + (edge(j + 1u) - edge(j)) * b;
}

// Payload bits of a choice: DC bits per non-zero tile, the AC bands' scale codes and codes per full tile.
fn payload_bits(c: ptr<function, array<u32, 8>>, nonzero: u32, full: u32) -> u32 {
    var ac = 0u;
    for (var j = 1u; j < p.nbands; j++) { ac += ac_band_bits(j, ac_bits((*c)[j])); }
    return nonzero * dc_bits((*c)[0]) + full * ac;
}

fn choice_error(c: ptr<function, array<u32, 8>>) -> f32 {
    var err = 0.0;
    for (var j = 0u; j < p.nbands; j++) { err = err + terms[j * 10u + (*c)[j]]; }
    return err;
}

// (err, size, index) ordering: less error, then smaller size, then the earlier choice.
fn better(e: f32, s: u32, i: u32, be: f32, bs: u32, bi: u32) -> bool {
    return i != NONE && (bi == NONE || e < be || (e == be && (s < bs || (s == bs && i < bi))));
}

fn decode_index(idx: u32, c: ptr<function, array<u32, 8>>) {
    var r = idx;
    for (var j = p.nbands - 1u; j >= 1u; j--) {
        (*c)[j] = r % 10u;
        r = r / 10u;
    }
    (*c)[0] = r;
}

@compute @workgroup_size(256)
fn alloc_bits(@builtin(local_invocation_index) lid: u32) {
    // 1. The segment's statistics, each by a strided sum then the tree; those the analysis leaves
    // zero (the DC's band slots and those of absent bands) are not summed.
    for (var s = 0u; s < STATS; s++) {
        let band = s & 7u;
        if (s < 16u && (band == 0u || band >= p.nbands)) {
            if (lid == 0u) { tot[s] = 0.0; }
            continue;
        }
        var v = 0.0;
        for (var r = lid; r < p.groups; r += WG) { v = fold(v, partials[r * STATS + s], s == STATS - 1u); }
        red[lid] = v;
        tree(lid, s == STATS - 1u);
        if (lid == 0u) { tot[s] = red[0]; }
        workgroupBarrier();
    }
    var d = 0.0;
    for (var q = lid; q < p.planes; q += WG) {
        let m = bitcast<f32>(plane_dcmax[q]);
        d = d + f32(plane_dcmax[p.planes + q]) * (m * m);
    }
    red[lid] = d;
    tree(lid, false);
    if (lid == 0u) { tot[20] = red[0]; }
    workgroupBarrier();
    let full = u32(tot[18]);
    let nonzero = u32(tot[17]) + full;
    // 2. The estimated error of every band at every choice.
    if (lid < p.nbands * 10u) {
        let j = lid / 10u;
        let c = lid % 10u;
        let b = choice_bits(j, c);
        var t = 0.0;
        if (j == 0u) {
            t = select(tot[20] * inv_l2(min(b, 8u)), tot[20] * F16_ERR, b == 16u) * p.weight;
        } else if (b == 0u) {
            t = tot[8u + j] * p.drop_weight;
        } else {
            t = select(tot[j] * inv_l2(min(b, 8u)), tot[j] * F16_ERR, b == 16u);
        }
        terms[lid] = t;
    }
    workgroupBarrier();
    // 3. The choice: every combination (few bands) split over the workgroup, greedy (many bands),
    // or the fixed bits.
    var c: array<u32, 8>;
    var be = 0.0;
    var bs = 0u;
    var bi = NONE;
    if (p.mode == MODE_EXHAUSTIVE) {
        // The last band innermost: a prefix's error and size are summed once, and each choice of
        // the last band adds its own term and bits (the sums of choice_error and payload_bits, in
        // their order, so the choice is theirs bit for bit at a tenth of the work).
        let last = p.nbands - 1u;
        var prefixes = 9u;
        for (var j = 1u; j < last; j++) { prefixes *= 10u; }
        for (var pre = lid; pre < prefixes; pre += WG) {
            decode_index(pre * 10u, &c);
            var pe = 0.0;
            for (var j = 0u; j < last; j++) { pe = pe + terms[j * 10u + c[j]]; }
            let ps = payload_bits(&c, nonzero, full);
            for (var k = 0u; k < 10u; k++) {
                let size = ps + full * ac_band_bits(last, ac_bits(k));
                if (size > p.limit_bits) { continue; }
                let err = pe + terms[last * 10u + k];
                let idx = pre * 10u + k;
                if (better(err, size, idx, be, bs, bi)) {
                    be = err;
                    bs = size;
                    bi = idx;
                }
            }
        }
    }
    best_err[lid] = be;
    best_size[lid] = bs;
    best_idx[lid] = bi;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (lid < stride) {
            let o = lid + stride;
            if (better(best_err[o], best_size[o], best_idx[o], best_err[lid], best_size[lid], best_idx[lid])) {
                best_err[lid] = best_err[o];
                best_size[lid] = best_size[o];
                best_idx[lid] = best_idx[o];
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) { write_choice(&c, nonzero, full); }
    storageBarrier(); // the header's class sizes, for every lane
    // 5. Without reuse the classes are final: the blocks' offsets from the analysis's class counts.
    if (p.reuse == 0u) { place_blocks(lid, true); }
}

// The choice's header and statistics (lane 0 of alloc_bits).
fn write_choice(c: ptr<function, array<u32, 8>>, nonzero: u32, full: u32) {
    for (var j = 0u; j < 8u; j++) { (*c)[j] = 0u; }
    var flags = 0u;
    if (p.mode == MODE_EXHAUSTIVE) {
        if (best_idx[0] != NONE) { decode_index(best_idx[0], c); } else { flags = 1u; }
    } else if (p.mode == MODE_FIXED) {
        for (var j = 0u; j < p.nbands; j++) {
            let b = p.fixed[j >> 2u][j & 3u];
            (*c)[j] = select(select(b, 9u, b == 16u), select(b - 1u, 8u, b == 16u), j == 0u);
        }
    } else {
        greedy(c, nonzero, full);
    }
    // 4. Header and statistics.
    var ac = 0u;
    var f16 = false;
    for (var j = 0u; j < 8u; j++) {
        let b = select(0u, choice_bits(j, (*c)[j]), j < p.nbands);
        region[j] = b;
        stats[6u + j] = b;
        if (j > 0u) { ac += ac_band_bits(j, b); }
        f16 = f16 || (j > 0u && b == 16u);
    }
    // The pack launch the bits need gets the grid (one invocation per tile as in the analysis, in
    // rows pack_x wide), the others none.
    let rows = (p.groups + p.pack_x - 1u) / p.pack_x;
    for (var k = 0u; k < 9u; k++) { pack_args[k] = select(1u, 0u, k % 3u == 0u); }
    let top_zero = p.nbands > 1u && region[p.nbands - 1u] == 0u;
    let on = select(select(0u, 3u, top_zero), 6u, f16);
    pack_args[on] = p.pack_x;
    pack_args[on + 1u] = rows;
    let e0 = clamp(exp_of(tot[19]) + 1, -90, 128);
    let b0 = dc_bits((*c)[0]);
    region[8] = bitcast<u32>(e0);
    region[9] = 0u;
    region[10] = b0;
    region[11] = b0 + ac;
    region[12] = 32u;
    region[13] = 0u;
    region[14] = flags;
    region[15] = p.nbands;
    stats[0] = u32(tot[16]);
    stats[1] = u32(tot[17]);
    stats[2] = full;
    stats[3] = 0u;
    stats[4] = 0u;
    stats[5] = 0u;
    stats[14] = bitcast<u32>(e0);
    stats[15] = bitcast<u32>(choice_error(c));
    for (var j = 0u; j < 8u; j++) {
        stats[16u + j] = bitcast<u32>(tot[j]);
        stats[24u + j] = bitcast<u32>(tot[8u + j]);
    }
    stats[32] = bitcast<u32>(tot[20]);
    stats[33] = bitcast<u32>(tot[19]);
    stats[34] = flags;
}

// Greedy marginal gain (many bands): move one band to whichever larger width reduces the error
// most per added payload bit and still fits; gains compared by cross products (no division).
fn greedy(c: ptr<function, array<u32, 8>>, nonzero: u32, full: u32) {
    for (var step = 0u; step < 80u; step++) {
        let size = payload_bits(c, nonzero, full);
        var bj = NONE;
        var bc = 0u;
        var bnum = 0.0;
        var bden = 1.0;
        for (var j = 0u; j < p.nbands; j++) {
            let now = (*c)[j];
            let len = select(10u, 9u, j == 0u);
            for (var k = now + 1u; k < len; k++) {
                (*c)[j] = k;
                let s = payload_bits(c, nonzero, full);
                (*c)[j] = now;
                if (s > p.limit_bits) { continue; }
                let num = terms[j * 10u + now] - terms[j * 10u + k];
                let den = f32(max(select(s - size, 0u, s < size), 1u));
                if (num > 0.0 && (bj == NONE || num * bden > bnum * den)) {
                    bj = j;
                    bc = k;
                    bnum = num;
                    bden = den;
                }
            }
        }
        if (bj == NONE) { return; }
        (*c)[bj] = bc;
    }
}

// The payload bits of block b (256 tiles): from the analysis, its four workgroups' DC-only and
// full tiles times their sizes in the header; else what pack_meta added up at its offset.
fn block_bits(b: u32, from_analysis: bool) -> u32 {
    if (!from_analysis) { return region[p.blk_off + b]; }
    var bits = 0u;
    for (var g = 4u * b; g < min(4u * b + 4u, p.groups); g++) {
        bits += u32(partials[g * STATS + 17u]) * region[10] + u32(partials[g * STATS + 18u]) * region[11];
    }
    return bits;
}

// The blocks' offsets in the region, each lane a run of blocks in order and lane 0 the runs'
// totals; then the payload bits used (header and statistics) and the store's window totals.
fn place_blocks(lid: u32, from_analysis: bool) {
    let blocks = (p.tiles + 255u) / 256u;
    let per = (blocks + WG - 1u) / WG;
    let first = min(lid * per, blocks);
    let last = min(first + per, blocks);
    var run = 0u;
    for (var b = first; b < last; b++) { run += block_bits(b, from_analysis); }
    best_size[lid] = run;
    workgroupBarrier();
    if (lid == 0u) {
        var acc_bits = 0u;
        for (var l = 0u; l < WG; l++) {
            let r = best_size[l];
            best_size[l] = acc_bits;
            acc_bits += r;
        }
        best_size[WG] = acc_bits;
    }
    workgroupBarrier();
    var off = best_size[lid];
    for (var b = first; b < last; b++) {
        let size = block_bits(b, from_analysis);
        region[p.blk_off + b] = off;
        off += size;
    }
    if (lid != 0u) { return; }
    let used = best_size[WG];
    region[13] = used;
    stats[5] = used;
    let bytes = 4u * (p.pay_off + (used + 31u) / 32u);
    let old = atomicAdd(&acc[0], bytes);
    if (old + bytes < old) { atomicAdd(&acc[1], 1u); }
    if (p.reuse != 0u) {
        atomicAdd(&acc[2], stats[4]);
        atomicAdd(&acc[3], stats[2]);
    }
}

// With reuse (whose references change classes after the allocation) and on the file path:
// between the class section and the pack, the blocks' sizes that pack_meta added up become their
// offsets, then the accounting.
@compute @workgroup_size(256)
fn finish_segment(@builtin(local_invocation_index) lid: u32) {
    place_blocks(lid, false);
}
