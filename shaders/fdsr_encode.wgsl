// fdsr encoder (docs/CODEC.md) of one segment (whole planes) into its device region: tile
// analysis with per-workgroup statistics, the class and DC-code sections, tile sizes, and the
// fused DCT + quantize + pack kernel. The bits, e0 and class sizes come from the region's header
// (written by shaders/fdsr_alloc.wgsl on the device, or by the host on the file path).
//
// Region words: header (src/codec/resident/layout.rs), DC codes (4 per word), 2-bit classes
// (16 per word), the bit offsets of the blocks of 256 tiles, the tile bitstream. One invocation per 8x8 tile unless said otherwise.
// Parameters, bindings, tile loads and band statistics: shaders/fdsr_tiles.wgsl (its prelude).

// a + b, or max(a, b) for the max statistic.
fn fold(a: f32, b: f32, is_max: bool) -> f32 { return select(a + b, max(a, b), is_max); }

// The slot of red that folding lane j of a workgroup sums: nbands - 1 band lengths x max^2, as
// many energies, the max, the class counts.
fn fold_slot(j: u32) -> u32 {
    let ac = p.nbands - 1u;
    if (j < ac) { return 1u + j; }
    if (j < 2u * ac) { return 9u + j - ac; }
    return select(16u, 19u, j == 2u * ac);
}

// Classifies tile t into work[t], sums the workgroup's statistics into partials[group * STATS + s],
// tiles in order (the max statistic max-ed), and records its plane's max |DC| and non-zero count.
@compute @workgroup_size(64)
fn analyze_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wg, nwg);
    let t = g * WG + lid;
    var bands: BandAcc;
    var cls = 0u;
    var mx = 0.0;
    if (t < p.tiles) {
        let x = load_tile(t);
        if (tile_nonzero(x)) {
            let c = dct_forward(x);
            let a = band_accumulate(c);
            // AC energy: the bands' energies added in order (absent bands add 0); max |coefficient|.
            let dc = c.r0.a.x;
            var ac = 0.0;
            mx = abs(dc);
            for (var b = 1u; b < 8u; b++) {
                ac += a.energy[b];
                mx = max(mx, a.mx[b]);
            }
            cls = select(2u, 1u, ac <= p.dc_threshold * (dc * dc + ac));
            if (cls == 2u) { bands = a; }
            atomicMax(&plane_dcmax[t / p.tiles_per_plane], bitcast<u32>(abs(dc)));
            atomicAdd(&plane_dcmax[p.planes + t / p.tiles_per_plane], 1u);
        }
        work[t] = cls;
    }
    write_stats(bands, cls, t < p.tiles, mx, lid);
    workgroupBarrier();
    // One lane per statistic that can be non-zero folds the workgroup's 64 tiles in order (one
    // barrier, not a tree's six): 2 nbands lanes, one SIMD chunk of a CPU rasterizer for the
    // default four bands. The slots left unwritten (the DC's, absent bands') are never read.
    let ac = p.nbands - 1u;
    if (lid >= 2u * ac + 2u || g * WG >= p.tiles) { return; }
    let slot = fold_slot(lid);
    let is_max = slot == 19u;
    var acc = red[slot * WG];
    for (var l = 1u; l < WG; l++) { acc = fold(acc, red[slot * WG + l], is_max); }
    let base = g * STATS;
    if (slot != 16u) {
        partials[base + slot] = acc;
        return;
    }
    let n = u32(acc);
    for (var k = 0u; k < 3u; k++) { partials[base + 16u + k] = f32((n >> (8u * k)) & 0xffu); }
}

// The yardstick of `fdsr bench codec`: reads every tile as analyze_tiles and pack_tiles do and
// writes one word per tile, the least any pass over the segment's tiles costs on a device.
@compute @workgroup_size(64)
fn read_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t < p.tiles) { work[t] = select(0u, 1u, tile_nonzero(load_tile(t))); }
}

// One invocation per word of the class section (16 tiles), which with `sizes` also adds the
// word's payload bits to its block's size (the block-offset section is zero until then;
// finish_segment of shaders/fdsr_alloc.wgsl scans the sizes into offsets; without `sizes` the
// allocation placed the blocks already), and then one per word of the DC-code section (4 planes,
// each its largest |DC| coded under the header's e0).
@compute @workgroup_size(64)
fn pack_meta(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wg, nwg) * WG + lid;
    let cls_words = (p.tiles + 15u) / 16u;
    if (i < cls_words) {
        var word = 0u;
        for (var k = 0u; k < 16u; k++) {
            let t = i * 16u + k;
            if (t < p.tiles) { word |= (work[t] & 3u) << (2u * k); }
        }
        atomicStore(&region[p.cls_off + i], word);
        if (p.sizes != 0u) { atomicAdd(&region[p.blk_off + (i >> 4u)], word_bits(word, class_sizes())); }
        return;
    }
    let j = i - cls_words;
    if (j >= (p.planes + 3u) / 4u) { return; }
    let e0 = header_e0();
    var word = 0u;
    for (var k = 0u; k < 4u; k++) {
        let plane = j * 4u + k;
        if (plane < p.planes) {
            word |= encode_scale(bitcast<f32>(atomicLoad(&plane_dcmax[plane])), e0) << (8u * k);
        }
    }
    atomicStore(&region[p.dc_off + j], word);
}

// Bit writer of one invocation. `put` only appends to a 64-bit window (`lo`, `hi`, `n` bits)
// of the tile's stream as if the stream began at bit 0; `drain` writes its first word, once full,
// shifted by the tile's phase `s` and OR-ed with the `carry` that the previous word left over
// (neighbouring tiles share their boundary words). A caller drains at least once per 32 bits
// put. Writes thus happen at a few fixed places of the code instead of at every code: a CPU
// rasterizer runs a write for a vector of tiles wherever any of them might write.
struct Writer { word: u32, lo: u32, hi: u32, n: u32, s: u32, carry: u32 }

// Appends the low nbits (0..=16) of value; the window must have room (n + nbits <= 64).
fn put(wr: ptr<function, Writer>, value: u32, nbits: u32) {
    let v = value & ((1u << nbits) - 1u);
    let n = (*wr).n;
    // Branch-free: below 32 the value goes to lo and what passes bit 32 to hi, from 32 on to hi.
    (*wr).lo |= select(0u, v << n, n < 32u);
    (*wr).hi |= select(select(0u, v >> (32u - n), n > 0u), v << (n - 32u), n >= 32u);
    (*wr).n = n + nbits;
}

fn write_word(wr: ptr<function, Writer>, full: u32) {
    atomicOr(&region[p.pay_off + (*wr).word], (full << (*wr).s) | (*wr).carry);
    (*wr).word += 1u;
    (*wr).carry = select(full >> (32u - (*wr).s), 0u, (*wr).s == 0u);
}

fn drain(wr: ptr<function, Writer>) {
    if ((*wr).n >= 32u) {
        write_word(wr, (*wr).lo);
        (*wr).lo = (*wr).hi;
        (*wr).hi = 0u;
        (*wr).n -= 32u;
    }
}

fn flush(wr: ptr<function, Writer>) {
    drain(wr);
    let s = (*wr).s;
    let n = (*wr).n;
    if (n > 0u || s > 0u) { atomicOr(&region[p.pay_off + (*wr).word], ((*wr).lo << s) | (*wr).carry); }
    if (s + n > 32u) { atomicOr(&region[p.pay_off + (*wr).word + 1u], (*wr).lo >> (32u - s)); }
}

// The pack of one full tile's AC coefficients: the tile's RNG key, and per band its
// bits, scale code and inverse scale.
struct Pack { key: u32, stochastic: bool, bits: array<u32, 8>, code: array<u32, 8>, inv: array<f32, 8> }

// The AC bands pack_tiles writes: all, or (where the top band has 0 bits, so writes nothing) all
// but the top one, whose coefficients a pipeline built with that constant leaves out at compile
// time; a CPU rasterizer would otherwise run them, as it runs both sides of every branch.
override PACKED_BANDS: u32 = 8u;

// Puts coefficient z (value v) of a full tile, after its band's scale code where z opens the
// band (at most 32 bits over two calls: drain after every second). No AC band is at 16 bits here.
fn emit(wr: ptr<function, Writer>, s: ptr<function, Pack>, z: u32, v: f32) {
    let b = band_of(z);
    if (b >= PACKED_BANDS) { return; }
    let bits = (*s).bits[b];
    if (z == band_start(b)) { put(wr, (*s).code[b], select(AC_SCALE_BITS, 0u, bits == 0u)); }
    put(wr, quantize_sym(v, (*s).inv[b], bits, hash32((*s).key ^ z) >> 8u, (*s).stochastic), bits);
}

// AC band b's bits, scale code (0: the band is zero in this tile) and inverse scale, from its
// largest |coefficient| m. Called with a constant b per band, not in a loop: a loop over the
// bands indexes the arrays of s at run time, and lavapipe then keeps them in slow scratch memory
// for the whole pack (a quarter of its time).
fn band_setup(s: ptr<function, Pack>, b: u32, m: f32, e0: i32) {
    if (b >= PACKED_BANDS) { return; }
    let bits = select(0u, band_bits(b), b < p.nbands);
    let code = select(0u, ac_band_code(m, e0, bits), bits > 0u);
    (*s).bits[b] = bits;
    (*s).code[b] = code;
    (*s).inv[b] = select(inv_scale(ac_scale_code(code), e0), 0.0, code == 0u);
}

// A tile's pack up to its AC coefficients, shared by both packers: a reference's 32 bits, else
// the DC code; `full` when AC coefficients follow (class 2), with the tile's coefficients, its RNG
// key (coefficient z draws hash32(key ^ z) >> 8) and what their codes need.
struct Head { full: bool, c: Tile, key: u32, e0: i32, stochastic: bool }

fn pack_head(t: u32, cls: u32, wr: ptr<function, Writer>) -> Head {
    if (cls == 3u) {
        // A reference stores its representative (a tile of this segment) in 32 bits.
        let s = tile_state[3u * t + 2u];
        put(wr, s & 0xffffu, 16u);
        put(wr, s >> 16u, 16u);
        drain(wr);
        return Head(false, Tile(), 0u, 0, false);
    }
    let c = dct_forward(load_tile(t));
    let dc = c.r0.a.x;
    let stochastic = p.stochastic != 0u;
    let gt = p.tile_base + t;
    // rng24(seed, stream, gt * 64 + z) = hash32(key ^ z) >> 8.
    let key = rng_key(p.seed, p.stream) ^ (gt * 64u);
    let e0 = header_e0();
    let bdc = band_bits(0u);
    if (bdc == 16u) {
        put(wr, f16_bits(dc), 16u);
    } else {
        let dcode = dc_code(t / p.tiles_per_plane);
        let inv = select(inv_scale(dcode, e0), 0.0, dcode == 0u);
        put(wr, quantize_sym(dc, inv, bdc, hash32(key) >> 8u, stochastic), bdc);
    }
    drain(wr);
    return Head(cls == 2u, c, key, e0, stochastic);
}

// The writer of tile t's payload, at its bit offset.
fn tile_writer(t: u32) -> Writer {
    let start = tile_offset(t);
    return Writer(start >> 5u, 0u, 0u, 0u, start & 31u, 0u);
}

@compute @workgroup_size(64)
fn pack_tiles(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t >= p.tiles || tile_class(t) == 0u) { return; }
    var wr = tile_writer(t);
    let h = pack_head(t, tile_class(t), &wr);
    if (h.full) {
        // Every AC coefficient in zig-zag order, each band's scale code before its first.
        var s = Pack(h.key, h.stochastic, array<u32, 8>(), array<u32, 8>(), array<f32, 8>());
        let mx = band_accumulate(h.c); // (its energies unused)
        band_setup(&s, 1u, mx.mx[1], h.e0);
        band_setup(&s, 2u, mx.mx[2], h.e0);
        band_setup(&s, 3u, mx.mx[3], h.e0);
        band_setup(&s, 4u, mx.mx[4], h.e0);
        band_setup(&s, 5u, mx.mx[5], h.e0);
        band_setup(&s, 6u, mx.mx[6], h.e0);
        band_setup(&s, 7u, mx.mx[7], h.e0);
        emit(&wr, &s, 1u, h.c.r0.a.y);
        emit(&wr, &s, 2u, h.c.r1.a.x);
        drain(&wr);
        emit(&wr, &s, 3u, h.c.r2.a.x);
        emit(&wr, &s, 4u, h.c.r1.a.y);
        drain(&wr);
        emit(&wr, &s, 5u, h.c.r0.a.z);
        emit(&wr, &s, 6u, h.c.r0.a.w);
        drain(&wr);
        emit(&wr, &s, 7u, h.c.r1.a.z);
        emit(&wr, &s, 8u, h.c.r2.a.y);
        drain(&wr);
        emit(&wr, &s, 9u, h.c.r3.a.x);
        emit(&wr, &s, 10u, h.c.r4.a.x);
        drain(&wr);
        emit(&wr, &s, 11u, h.c.r3.a.y);
        emit(&wr, &s, 12u, h.c.r2.a.z);
        drain(&wr);
        emit(&wr, &s, 13u, h.c.r1.a.w);
        emit(&wr, &s, 14u, h.c.r0.b.x);
        drain(&wr);
        emit(&wr, &s, 15u, h.c.r0.b.y);
        emit(&wr, &s, 16u, h.c.r1.b.x);
        drain(&wr);
        emit(&wr, &s, 17u, h.c.r2.a.w);
        emit(&wr, &s, 18u, h.c.r3.a.z);
        drain(&wr);
        emit(&wr, &s, 19u, h.c.r4.a.y);
        emit(&wr, &s, 20u, h.c.r5.a.x);
        drain(&wr);
        emit(&wr, &s, 21u, h.c.r6.a.x);
        emit(&wr, &s, 22u, h.c.r5.a.y);
        drain(&wr);
        emit(&wr, &s, 23u, h.c.r4.a.z);
        emit(&wr, &s, 24u, h.c.r3.a.w);
        drain(&wr);
        emit(&wr, &s, 25u, h.c.r2.b.x);
        emit(&wr, &s, 26u, h.c.r1.b.y);
        drain(&wr);
        emit(&wr, &s, 27u, h.c.r0.b.z);
        emit(&wr, &s, 28u, h.c.r0.b.w);
        drain(&wr);
        emit(&wr, &s, 29u, h.c.r1.b.z);
        emit(&wr, &s, 30u, h.c.r2.b.y);
        drain(&wr);
        emit(&wr, &s, 31u, h.c.r3.b.x);
        emit(&wr, &s, 32u, h.c.r4.a.w);
        drain(&wr);
        emit(&wr, &s, 33u, h.c.r5.a.z);
        emit(&wr, &s, 34u, h.c.r6.a.y);
        drain(&wr);
        emit(&wr, &s, 35u, h.c.r7.a.x);
        emit(&wr, &s, 36u, h.c.r7.a.y);
        drain(&wr);
        emit(&wr, &s, 37u, h.c.r6.a.z);
        emit(&wr, &s, 38u, h.c.r5.a.w);
        drain(&wr);
        emit(&wr, &s, 39u, h.c.r4.b.x);
        emit(&wr, &s, 40u, h.c.r3.b.y);
        drain(&wr);
        emit(&wr, &s, 41u, h.c.r2.b.z);
        emit(&wr, &s, 42u, h.c.r1.b.w);
        drain(&wr);
        emit(&wr, &s, 43u, h.c.r2.b.w);
        emit(&wr, &s, 44u, h.c.r3.b.z);
        drain(&wr);
        emit(&wr, &s, 45u, h.c.r4.b.y);
        emit(&wr, &s, 46u, h.c.r5.b.x);
        drain(&wr);
        emit(&wr, &s, 47u, h.c.r6.a.w);
        emit(&wr, &s, 48u, h.c.r7.a.z);
        drain(&wr);
        emit(&wr, &s, 49u, h.c.r7.a.w);
        emit(&wr, &s, 50u, h.c.r6.b.x);
        drain(&wr);
        emit(&wr, &s, 51u, h.c.r5.b.y);
        emit(&wr, &s, 52u, h.c.r4.b.z);
        drain(&wr);
        emit(&wr, &s, 53u, h.c.r3.b.w);
        emit(&wr, &s, 54u, h.c.r4.b.w);
        drain(&wr);
        emit(&wr, &s, 55u, h.c.r5.b.z);
        emit(&wr, &s, 56u, h.c.r6.b.y);
        drain(&wr);
        emit(&wr, &s, 57u, h.c.r7.b.x);
        emit(&wr, &s, 58u, h.c.r7.b.y);
        drain(&wr);
        emit(&wr, &s, 59u, h.c.r6.b.z);
        emit(&wr, &s, 60u, h.c.r5.b.w);
        drain(&wr);
        emit(&wr, &s, 61u, h.c.r6.b.w);
        emit(&wr, &s, 62u, h.c.r7.b.z);
        drain(&wr);
        emit(&wr, &s, 63u, h.c.r7.b.w);
    }
    flush(&wr);
}

// pack_tiles with loops instead of its unrolled zig-zag (the same bytes), and every AC band may be
// at 16 bits (f16 codes): about a tenth of the pipeline's build time on a software adapter and ten
// times its run time on lavapipe. For a page that builds its pipelines before its first training
// step (ContextOptions::compact_shaders), and elsewhere where the bits hold an f16 band: leaving
// the f16 conversion out of pack_tiles spares a CPU rasterizer running it for every coefficient.
@compute @workgroup_size(64)
fn pack_tiles_compact(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                      @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wg, nwg) * WG + lid;
    if (t >= p.tiles || tile_class(t) == 0u) { return; }
    var wr = tile_writer(t);
    let h = pack_head(t, tile_class(t), &wr);
    if (h.full) {
        // Band by band in zig-zag order: the band's scale code, then its coefficients' codes (f16
        // without a scale code at 16 bits; nothing at 0). Loops, not unrolled: a browser's
        // software adapter compiles this pipeline before the first training step.
        let zz = zigzag_order(h.c);
        for (var b = 1u; b < p.nbands; b++) {
            let bits = band_bits(b);
            let lo = band_start(b);
            let hi = band_start(b + 1u);
            if (bits == 16u) {
                for (var z = lo; z < hi; z++) {
                    put(&wr, f16_bits(zz[z]), 16u);
                    drain(&wr);
                }
            } else if (bits > 0u) {
                var mx = 0.0;
                for (var z = lo; z < hi; z++) { mx = max(mx, abs(zz[z])); }
                let code = ac_band_code(mx, h.e0, bits);
                let inv = select(inv_scale(ac_scale_code(code), h.e0), 0.0, code == 0u);
                put(&wr, code, AC_SCALE_BITS);
                drain(&wr);
                for (var z = lo; z < hi; z++) {
                    put(&wr, quantize_sym(zz[z], inv, bits, hash32(h.key ^ z) >> 8u, h.stochastic), bits);
                    drain(&wr);
                }
            }
        }
    }
    flush(&wr);
}
