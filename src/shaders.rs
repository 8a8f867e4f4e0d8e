//! The one shader registry: WGSL sources by name, each prefixed with the shared primitives it uses.

/// The counter-based RNG (`hash32`, `rng24`), prepended to every shader that draws random numbers.
pub const RNG: &str = include_str!("../shaders/rng.wgsl");

/// Shared codec primitives (scale codes, quantization, bit packing, the DCT) with the host
/// tables at binding 0, prepended (after [`RNG`]) to codec shaders.
pub const COMMON: &str = include_str!("../shaders/common.wgsl");

/// Edge-replicated 8x8 tile loads (`load_row`, `load_tile`) and a tile's zig-zag order
/// (`zigzag_order`) for the shaders that read a tensor's tiles; each declares the `p` and `input`
/// they read.
pub const TILE_LOAD: &str = include_str!("../shaders/tile_load.wgsl");

/// The fdsr band edges as pipeline constants (`band_of`, `band_start`), prepended to the fdsr
/// encoder and decoder.
pub const BANDS: &str = include_str!("../shaders/bands.wgsl");

/// The tile bit offsets (`tile_offset`, `word_bits`) shared by the fdsr encoder and decoder.
pub const TILE_OFFSETS: &str = include_str!("../shaders/tile_offsets.wgsl");

/// The fdsr encoder's parameters, bindings and per-band statistics, prepended (after
/// [`COMMON`], [`TILE_LOAD`] and [`BANDS`]) to its passes.
pub const FDSR_TILES: &str = include_str!("../shaders/fdsr_tiles.wgsl");

/// `GateParams`, the uniform both DFQ gate shaders take, prepended (after [`RNG`]) to them.
pub const GATE: &str = include_str!("../shaders/gate_params.wgsl");

/// Workgroup sums through workgroup memory (`block_sum2`), for devices without subgroups.
pub const REDUCE_WG: &str = include_str!("../shaders/reduce_wg.wgsl");

/// Workgroup sums with subgroup operations, the same interface as [`REDUCE_WG`].
pub const REDUCE_SG: &str = include_str!("../shaders/reduce_sg.wgsl");

/// The GEMM operand addressing (parameters, bindings 0-4, loads of A and B, stores of C) shared by
/// the f32 and cooperative-matrix GEMM shaders.
pub const GEMM_ADDR: &str = include_str!("../shaders/gemm_addr.wgsl");

/// The cooperative-matrix GEMM's power-of-two scales (`scale_exp`, `unscale`).
pub const SCALE_FNS: &str = include_str!("../shaders/gemm_scale_fns.wgsl");

/// The enable directives of the cooperative-matrix GEMM (directives must open the module, so they
/// come before [`GEMM_ADDR`]). Native only: they need `SHADER_F16` and
/// `EXPERIMENTAL_COOPERATIVE_MATRIX` (and the kernel `SUBGROUP` for its builtins).
pub const COOP_ENABLE: &str = "enable f16;\nenable wgpu_cooperative_matrix;\n";

/// The tile heights (`TM`, rows of C per workgroup) `gemm.wgsl` is built for, tallest first.
pub const GEMM_TILE_ROWS: [usize; 3] = [64, 32, 16];

/// What is prepended to a shader's own WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prelude {
    /// Nothing.
    None,
    /// [`RNG`].
    Rng,
    /// [`RNG`] then [`COMMON`] (its tables are then binding 0).
    Codec,
    /// [`RNG`], [`COMMON`] then [`TILE_LOAD`].
    Tiles,
    /// [`RNG`], [`COMMON`], [`TILE_LOAD`], [`BANDS`] then [`FDSR_TILES`].
    Encode,
    /// [`RNG`], [`COMMON`] then [`BANDS`].
    Decode,
    /// [`RNG`] then [`GATE`].
    Gate,
    /// [`REDUCE_WG`].
    Reduce,
    /// [`REDUCE_SG`] (needs the device's `SUBGROUP` feature).
    ReduceSubgroup,
    /// [`GEMM_ADDR`].
    Gemm,
    /// [`COOP_ENABLE`], [`GEMM_ADDR`] then [`SCALE_FNS`] (needs the features [`COOP_ENABLE`]
    /// names), the body built for `fragment`×`fragment` cooperative matrices (16 as written, or
    /// 8: see [`coop_body`]).
    GemmCoop {
        /// The fragments' size.
        fragment: u32,
    },
    /// [`SCALE_FNS`].
    Scale,
}

/// One registered shader.
pub struct ShaderInfo {
    /// Registry name (also the label).
    pub name: &'static str,
    /// The file's WGSL.
    pub body: &'static str,
    /// What is prepended to `body`.
    pub prelude: Prelude,
    /// Kind of each binding of group 0, in order: `u` uniform, `r` read-only storage,
    /// `w` read-write storage. Every entry point of the shader shares this layout.
    pub layout: &'static str,
}

const fn shader(name: &'static str, body: &'static str, prelude: Prelude, layout: &'static str) -> ShaderInfo {
    ShaderInfo { name, body, prelude, layout }
}

const GEMM_COOP: &str = include_str!("../shaders/gemm_coop.wgsl");
const OPS_BN: &str = include_str!("../shaders/ops_bn.wgsl");
const OPS_LOSS: &str = include_str!("../shaders/ops_loss.wgsl");
const OPS_COMPARE: &str = include_str!("../shaders/ops_compare.wgsl");

/// Every shader of the crate. A reducing shader is registered twice: `NAME` with workgroup-memory
/// sums and `NAME_sg` with subgroup sums.
pub const SHADERS: &[ShaderInfo] = &[
    shader("copy", include_str!("../shaders/copy.wgsl"), Prelude::None, "rwu"),
    shader("fdsr_encode", include_str!("../shaders/fdsr_encode.wgsl"), Prelude::Encode, "uurwwwwr"),
    shader("fdsr_alloc", include_str!("../shaders/fdsr_alloc.wgsl"), Prelude::None, "urrwwww"),
    shader("fdsr_decode", include_str!("../shaders/fdsr_decode.wgsl"), Prelude::Decode, "uurw"),
    shader("fdsr_reuse", include_str!("../shaders/fdsr_reuse.wgsl"), Prelude::Tiles, "uuruwrwwr"),
    shader("uniform", include_str!("../shaders/uniform.wgsl"), Prelude::Codec, "uurwwww"),
    shader("division", include_str!("../shaders/division.wgsl"), Prelude::Tiles, "uurwwww"),
    shader("gemm", include_str!("../shaders/gemm.wgsl"), Prelude::Gemm, "urrrw"),
    shader("gemm_coop", GEMM_COOP, Prelude::GemmCoop { fragment: 16 }, "urrrwr"),
    shader("gemm_coop8", GEMM_COOP, Prelude::GemmCoop { fragment: 8 }, "urrrwr"),
    shader("gemm_scale", include_str!("../shaders/gemm_scale.wgsl"), Prelude::Scale, "urrw"),
    shader("ops_elementwise", include_str!("../shaders/ops_elementwise.wgsl"), Prelude::None, "urrww"),
    shader("ops_pool", include_str!("../shaders/ops_pool.wgsl"), Prelude::None, "urrww"),
    shader("ops_bn", OPS_BN, Prelude::Reduce, "urrrrrwww"),
    shader("ops_bn_sg", OPS_BN, Prelude::ReduceSubgroup, "urrrrrwww"),
    shader("ops_loss", OPS_LOSS, Prelude::Reduce, "urrwww"),
    shader("ops_loss_sg", OPS_LOSS, Prelude::ReduceSubgroup, "urrwww"),
    shader("ops_compare", OPS_COMPARE, Prelude::Reduce, "urrw"),
    shader("ops_compare_sg", OPS_COMPARE, Prelude::ReduceSubgroup, "urrw"),
    shader("ops_optim", include_str!("../shaders/ops_optim.wgsl"), Prelude::None, "uwrww"),
    shader("fakequant", include_str!("../shaders/fakequant.wgsl"), Prelude::Rng, "urwwr"),
    shader("gate_forward", include_str!("../shaders/gate_forward.wgsl"), Prelude::Gate, "urrrwwww"),
    shader("gate_backward", include_str!("../shaders/gate_backward.wgsl"), Prelude::Gate, "urrrrrwww"),
];

/// Names of every registered shader.
pub fn names() -> impl Iterator<Item = &'static str> {
    SHADERS.iter().map(|s| s.name)
}

/// Registry entry of shader `name`.
pub fn info(name: &str) -> Option<&'static ShaderInfo> {
    SHADERS.iter().find(|s| s.name == name)
}

/// Full WGSL source of shader `name`, or `None` if it is not registered.
pub fn source(name: &str) -> Option<String> {
    info(name).map(|s| match s.prelude {
        Prelude::None => s.body.to_string(),
        Prelude::Rng => format!("{RNG}\n{}", s.body),
        Prelude::Codec => format!("{RNG}\n{COMMON}\n{}", s.body),
        Prelude::Tiles => format!("{RNG}\n{COMMON}\n{TILE_LOAD}\n{}", s.body),
        Prelude::Encode => format!("{RNG}\n{COMMON}\n{TILE_LOAD}\n{BANDS}\n{TILE_OFFSETS}\n{FDSR_TILES}\n{}", s.body),
        Prelude::Decode => format!("{RNG}\n{COMMON}\n{BANDS}\n{TILE_OFFSETS}\n{}", s.body),
        Prelude::Gate => format!("{RNG}\n{GATE}\n{}", s.body),
        Prelude::Reduce => format!("{REDUCE_WG}\n{}", s.body),
        Prelude::ReduceSubgroup => format!("{REDUCE_SG}\n{}", s.body),
        Prelude::Gemm => format!("{GEMM_ADDR}\n{}", s.body),
        Prelude::GemmCoop { fragment } => {
            format!("{COOP_ENABLE}{GEMM_ADDR}\n{SCALE_FNS}\n{}", coop_body(s.body, fragment))
        }
        Prelude::Scale => format!("{SCALE_FNS}\n{}", s.body),
    })
}

/// `shaders/gemm_coop.wgsl` (written for 16×16 fragments) for `fragment`×`fragment` ones: its
/// fragment size `D` and the three fragment types rewritten, everything else derived from `D`.
pub fn coop_body(body: &str, fragment: u32) -> String {
    body.replace("const D: u32 = 16u;", &format!("const D: u32 = {fragment}u;"))
        .replace("coop_mat16x16<", &format!("coop_mat{fragment}x{fragment}<"))
}
