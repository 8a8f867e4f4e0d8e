// What the fdsr encoder's passes share (docs/CODEC.md): its parameters and bindings, the header
// and section reads of its region, and the per-band statistics of a
// tile's AC coefficients with the band edges as pipeline constants. Prepended (after the codec
// primitives and shaders/tile_load.wgsl) to shaders/fdsr_encode.wgsl.

struct FdsrParams {
    planes: u32, h: u32, w: u32, tiles_x: u32,
    tiles_per_plane: u32, tiles: u32, tile_base: u32, nbands: u32,
    seed: u32, stream: u32, stochastic: u32, dc_threshold: f32,
    dc_off: u32, cls_off: u32, pay_off: u32, blk_off: u32,
    sizes: u32, _s0: u32, _s1: u32, _s2: u32,
    edges: array<vec4<u32>, 3>,
}

// Per workgroup: 8 x sum(n*max^2), 8 x sum(coef^2) (slots 0 and 8, the DC's, and those of absent
// bands are neither written nor read), the zero, dc-only and full tile counts, the max.
const STATS: u32 = 20u;
const WG: u32 = 64u;
const H_BITS: u32 = 0u;
const H_E0: u32 = 8u;
const H_CLASS_BITS: u32 = 9u;

@group(0) @binding(1) var<uniform> p: FdsrParams;
@group(0) @binding(2) var<storage, read> input: array<f32>;
// Per tile its class (analyze_tiles; references marked by shaders/fdsr_reuse.wgsl).
@group(0) @binding(3) var<storage, read_write> work: array<u32>;
// Per plane of the segment: the bits of max |DC|, then (at planes + plane) the non-zero tile count.
@group(0) @binding(4) var<storage, read_write> plane_dcmax: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;
@group(0) @binding(6) var<storage, read_write> region: array<atomic<u32>>;
// Reuse state per tile (shaders/fdsr_reuse.wgsl): the representative of a reference at 3t + 2.
@group(0) @binding(7) var<storage, read> tile_state: array<u32>;

// Per-tile statistics of a workgroup, statistic s of invocation l at s * WG + l.
var<workgroup> red: array<f32, 1280>;

fn edge(i: u32) -> u32 { return p.edges[i >> 2u][i & 3u]; }
fn band_bits(i: u32) -> u32 { return atomicLoad(&region[H_BITS + i]); }
fn header_e0() -> i32 { return bitcast<i32>(atomicLoad(&region[H_E0])); }
fn class_size(c: u32) -> u32 { return atomicLoad(&region[H_CLASS_BITS + (c & 3u)]); }
fn class_word(i: u32) -> u32 { return atomicLoad(&region[p.cls_off + i]); }
fn tile_class(t: u32) -> u32 { return (class_word(t >> 4u) >> ((t & 15u) * 2u)) & 3u; }
fn block_offset(b: u32) -> u32 { return atomicLoad(&region[p.blk_off + b]); }
fn dc_code(plane: u32) -> u32 { return (atomicLoad(&region[p.dc_off + (plane >> 2u)]) >> ((plane & 3u) * 8u)) & 0xffu; }

fn row_nonzero(r: Row) -> bool { return any(r.a != vec4<f32>(0.0)) || any(r.b != vec4<f32>(0.0)); }

fn tile_nonzero(x: Tile) -> bool {
    return row_nonzero(x.r0) || row_nonzero(x.r1) || row_nonzero(x.r2) || row_nonzero(x.r3) ||
           row_nonzero(x.r4) || row_nonzero(x.r5) || row_nonzero(x.r6) || row_nonzero(x.r7);
}

// Per-band largest |coefficient| and energy of one tile's AC coefficients.
struct BandAcc { mx: array<f32, 8>, energy: array<f32, 8> }

fn band_acc(a: ptr<function, BandAcc>, z: u32, c: f32) {
    let b = band_of(z);
    (*a).mx[b] = max((*a).mx[b], abs(c));
    (*a).energy[b] += c * c;
}

// Per-band largest |coefficient| and energy of the AC coefficients of c, in zig-zag order.
fn band_accumulate(c: Tile) -> BandAcc {
    var a: BandAcc;
    band_acc(&a, 1u, c.r0.a.y);
    band_acc(&a, 2u, c.r1.a.x);
    band_acc(&a, 3u, c.r2.a.x);
    band_acc(&a, 4u, c.r1.a.y);
    band_acc(&a, 5u, c.r0.a.z);
    band_acc(&a, 6u, c.r0.a.w);
    band_acc(&a, 7u, c.r1.a.z);
    band_acc(&a, 8u, c.r2.a.y);
    band_acc(&a, 9u, c.r3.a.x);
    band_acc(&a, 10u, c.r4.a.x);
    band_acc(&a, 11u, c.r3.a.y);
    band_acc(&a, 12u, c.r2.a.z);
    band_acc(&a, 13u, c.r1.a.w);
    band_acc(&a, 14u, c.r0.b.x);
    band_acc(&a, 15u, c.r0.b.y);
    band_acc(&a, 16u, c.r1.b.x);
    band_acc(&a, 17u, c.r2.a.w);
    band_acc(&a, 18u, c.r3.a.z);
    band_acc(&a, 19u, c.r4.a.y);
    band_acc(&a, 20u, c.r5.a.x);
    band_acc(&a, 21u, c.r6.a.x);
    band_acc(&a, 22u, c.r5.a.y);
    band_acc(&a, 23u, c.r4.a.z);
    band_acc(&a, 24u, c.r3.a.w);
    band_acc(&a, 25u, c.r2.b.x);
    band_acc(&a, 26u, c.r1.b.y);
    band_acc(&a, 27u, c.r0.b.z);
    band_acc(&a, 28u, c.r0.b.w);
    band_acc(&a, 29u, c.r1.b.z);
    band_acc(&a, 30u, c.r2.b.y);
    band_acc(&a, 31u, c.r3.b.x);
    band_acc(&a, 32u, c.r4.a.w);
    band_acc(&a, 33u, c.r5.a.z);
    band_acc(&a, 34u, c.r6.a.y);
    band_acc(&a, 35u, c.r7.a.x);
    band_acc(&a, 36u, c.r7.a.y);
    band_acc(&a, 37u, c.r6.a.z);
    band_acc(&a, 38u, c.r5.a.w);
    band_acc(&a, 39u, c.r4.b.x);
    band_acc(&a, 40u, c.r3.b.y);
    band_acc(&a, 41u, c.r2.b.z);
    band_acc(&a, 42u, c.r1.b.w);
    band_acc(&a, 43u, c.r2.b.w);
    band_acc(&a, 44u, c.r3.b.z);
    band_acc(&a, 45u, c.r4.b.y);
    band_acc(&a, 46u, c.r5.b.x);
    band_acc(&a, 47u, c.r6.a.w);
    band_acc(&a, 48u, c.r7.a.z);
    band_acc(&a, 49u, c.r7.a.w);
    band_acc(&a, 50u, c.r6.b.x);
    band_acc(&a, 51u, c.r5.b.y);
    band_acc(&a, 52u, c.r4.b.z);
    band_acc(&a, 53u, c.r3.b.w);
    band_acc(&a, 54u, c.r4.b.w);
    band_acc(&a, 55u, c.r5.b.z);
    band_acc(&a, 56u, c.r6.b.y);
    band_acc(&a, 57u, c.r7.b.x);
    band_acc(&a, 58u, c.r7.b.y);
    band_acc(&a, 59u, c.r6.b.z);
    band_acc(&a, 60u, c.r5.b.w);
    band_acc(&a, 61u, c.r6.b.w);
    band_acc(&a, 62u, c.r7.b.z);
    band_acc(&a, 63u, c.r7.b.w);
    return a;
}

// Invocation t's statistics into its slots of red, each written once: per AC band the band length
// x max^2 and the energy of a, its max |coefficient|, at slot 16 its class as a count, 2^(8 cls)
// (0 when not counted: the workgroup's sum is then the three counts, 8 bits each, exact in f32).
fn write_stats(a: BandAcc, cls: u32, counted: bool, mx: f32, t: u32) {
    for (var b = 1u; b < 8u; b++) {
        let len = select(0.0, f32(edge(b + 1u) - edge(b)), b < p.nbands);
        red[b * WG + t] = len * a.mx[b] * a.mx[b];
        red[(8u + b) * WG + t] = a.energy[b];
    }
    red[16u * WG + t] = select(0.0, f32(1u << (8u * cls)), counted && cls < 3u);
    red[19u * WG + t] = mx;
}
