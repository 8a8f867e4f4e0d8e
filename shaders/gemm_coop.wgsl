// The GEMM kernels of `gemm.wgsl` on cooperative matrices (tensor cores): the same four entry
// points, operand addressing, grid (x = tile of N, y = tile of M, z = split of K), output layout,
// bias and split-K slices, so `reduce_splits` of `gemm.wgsl` and `GemmPlan` serve both.
// Operands are staged in workgroup memory as f16 after multiplying by a power-of-two scale per
// operand tensor, 2^(14 - e) where max |x| < 2^e (so the largest staged value is below 2^14, far
// from f16's 65504, and small gradients keep their significant bits); the scales come from
// `gemm_scale.wgsl`'s abs-max of each operand (binding 5: the bits of max |A| and max |B|, never
// read back). D x D x D products accumulate in f32 and the result is scaled back exactly in f32.
//
// Fragments are D x D (D = 16, or 8 where the adapter offers only 8x8x8 f16→f32; the host builds
// the D = 8 module by rewriting the four lines below). A workgroup of 128 invocations holds a
// TM x TN tile of C as REGIONS regions of D x 4D (4 accumulators each): 4 of 16 x 64, or 16 of
// 8 x 32. Cooperative-matrix operations are subgroup-scoped and need uniform control flow, so
// every subgroup runs the same ROUNDS rounds of the whole K loop; in round r subgroup s owns region
// r * num_subgroups + s, and a subgroup past the last region computes a copy of a real region and
// stores it into a scratch area instead. The host sets ROUNDS from the adapter's largest subgroup
// size (ROUNDS * 128 / subgroup_max_size >= REGIONS; one round with NVIDIA's 32 or lavapipe's 8)
// and uses this kernel only where subgroup sizes are powers of two of at most 128, so subgroups
// are full whatever size the driver picks in `subgroup_min_size..=subgroup_max_size`.

const D: u32 = 16u;
alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias FragC = coop_mat16x16<f32, C>;

@group(0) @binding(5) var<storage, read> scales: array<u32>; // bits of max |A|, max |B|

override TM: u32 = 64u; // rows of C per workgroup: 16, 32 or 64
override TN: u32 = 4096u / TM; // columns of C per workgroup
override ROUNDS: u32 = 1u; // rounds of regions (see above)
override RCOLS: u32 = TN / (4u * D); // regions across the tile
override AN: u32 = TM * BK;
override BN: u32 = BK * TN;
const BK: u32 = 16u; // K per step
const WG: u32 = 128u;
const REGIONS: u32 = 1024u / (D * D); // regions of a tile
const SCRATCH: u32 = 4096u; // offset of the scratch region in Cs (D x 4D)

var<workgroup> As: array<f16, AN>; // [TM][BK] row-major, scaled
var<workgroup> Bs: array<f16, BN>; // [BK][TN] row-major, scaled
var<workgroup> Cs: array<f32, SCRATCH + 4u * D * D>; // [TM][TN] row-major, then the scratch region

// Stages the K step starting at k0 (k >= kend loads zeros), scaled and rounded to f16.
fn stage(mode: u32, m0: u32, k0: u32, kend: u32, tid: u32, cols: array<Col, 2>, sa: f32, sb: f32) {
    for (var v = tid; v < AN; v += WG) {
        let k = k0 + v % BK;
        var x = 0.0;
        if (k < kend) { x = load_a(mode, m0 + v / BK, k, k_decode(mode, k)); }
        As[v] = f16(x * sa);
    }
    for (var j = 0u; j * WG < BN; j++) {
        let v = tid + j * WG;
        let k = k0 + v / TN;
        var x = 0.0;
        if (k < kend) { x = load_b(mode, cols[j % 2u], k, k_decode(mode, k)); }
        Bs[v] = f16(x * sb);
    }
}

fn gemm_coop(mode: u32, wid: vec3<u32>, tid: u32, sg: u32, nsg: u32) {
    let m0 = wid.y * TM;
    let n0 = wid.x * TN;
    let kbeg = wid.z * p.k_split;
    let kend = min(p.k, kbeg + p.k_split);
    let ea = scale_exp(scales[0]);
    let eb = scale_exp(scales[1]);
    let sa = ldexp(1.0, ea);
    let sb = ldexp(1.0, eb);
    // The columns this invocation stages: tid % TN and (tid + 128) % TN (TN divides 256).
    var cols: array<Col, 2>;
    cols[0] = col_info(mode, n0 + tid % TN);
    cols[1] = col_info(mode, n0 + (tid + WG) % TN);
    for (var round = 0u; round < ROUNDS; round++) {
        let r = round * nsg + sg;
        let region = r % REGIONS;
        let row0 = (region / RCOLS) * D;
        let col0 = (region % RCOLS) * (4u * D);
        var acc0 = FragC();
        var acc1 = FragC();
        var acc2 = FragC();
        var acc3 = FragC();
        for (var k0 = kbeg; k0 < kend; k0 += BK) {
            stage(mode, m0, k0, kend, tid, cols, sa, sb);
            workgroupBarrier();
            for (var kk = 0u; kk < BK; kk += D) {
                // Every index and stride of a cooperative load or store is a `let` of its own
                // (naga's SPIR-V writer wants them evaluated before the pointer is formed).
                let bk = BK;
                let tn = TN;
                let ia = row0 * BK + kk;
                let ib0 = kk * TN + col0;
                let ib1 = ib0 + D;
                let ib2 = ib0 + 2u * D;
                let ib3 = ib0 + 3u * D;
                let a = coopLoadT<FragA>(&As[ia], bk);
                let b0 = coopLoadT<FragB>(&Bs[ib0], tn);
                let b1 = coopLoadT<FragB>(&Bs[ib1], tn);
                let b2 = coopLoadT<FragB>(&Bs[ib2], tn);
                let b3 = coopLoadT<FragB>(&Bs[ib3], tn);
                acc0 = coopMultiplyAdd(a, b0, acc0);
                acc1 = coopMultiplyAdd(a, b1, acc1);
                acc2 = coopMultiplyAdd(a, b2, acc2);
                acc3 = coopMultiplyAdd(a, b3, acc3);
            }
            workgroupBarrier();
        }
        // A subgroup past the last region writes into the scratch area (stride 4D).
        let real = r < REGIONS;
        let at = select(SCRATCH, row0 * TN + col0, real);
        let stride = select(4u * D, TN, real);
        let at1 = at + D;
        let at2 = at + 2u * D;
        let at3 = at + 3u * D;
        coopStoreT(acc0, &Cs[at], stride);
        coopStoreT(acc1, &Cs[at1], stride);
        coopStoreT(acc2, &Cs[at2], stride);
        coopStoreT(acc3, &Cs[at3], stride);
    }
    workgroupBarrier();
    // Scale back exactly and write like gemm.wgsl.
    for (var v = tid; v < TM * TN; v += WG) {
        let c = unscale(Cs[v], -(ea + eb));
        store_one(mode, wid.z, m0 + v / TN, n0 + v % TN, c);
    }
}

@compute @workgroup_size(128)
fn matmul_strided(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
                  @builtin(subgroup_id) sg: u32, @builtin(num_subgroups) nsg: u32) {
    gemm_coop(STRIDED, wid, tid, sg, nsg);
}

@compute @workgroup_size(128)
fn conv_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
                @builtin(subgroup_id) sg: u32, @builtin(num_subgroups) nsg: u32) {
    gemm_coop(CONV_FWD, wid, tid, sg, nsg);
}

@compute @workgroup_size(128)
fn conv_backward_data(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
                      @builtin(subgroup_id) sg: u32, @builtin(num_subgroups) nsg: u32) {
    gemm_coop(CONV_DATA, wid, tid, sg, nsg);
}

@compute @workgroup_size(128)
fn conv_backward_weight(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
                        @builtin(subgroup_id) sg: u32, @builtin(num_subgroups) nsg: u32) {
    gemm_coop(CONV_WEIGHT, wid, tid, sg, nsg);
}
