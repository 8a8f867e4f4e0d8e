//! The one shader registry: WGSL sources by name, each prefixed with the shared primitives.

/// Shared primitives (RNG, scale codes, quantization, bit packing) prepended to codec shaders.
pub const COMMON: &str = include_str!("../shaders/common.wgsl");

/// One registered shader.
pub struct ShaderInfo {
    /// Registry name (also the label).
    pub name: &'static str,
    /// The file's WGSL.
    pub body: &'static str,
    /// Whether [`COMMON`] is prepended (its tables are then binding 0).
    pub common: bool,
    /// Kind of each binding of group 0, in order: `u` uniform, `r` read-only storage,
    /// `w` read-write storage. Every entry point of the shader shares this layout.
    pub layout: &'static str,
}

const fn shader(name: &'static str, body: &'static str, common: bool, layout: &'static str) -> ShaderInfo {
    ShaderInfo { name, body, common, layout }
}

/// Every shader of the crate.
pub const SHADERS: &[ShaderInfo] = &[
    shader("copy", include_str!("../shaders/copy.wgsl"), false, "rwu"),
    shader("scan", include_str!("../shaders/scan.wgsl"), false, "uww"),
    shader("fdsr_encode", include_str!("../shaders/fdsr_encode.wgsl"), true, "uurwwwrww"),
    shader("fdsr_decode", include_str!("../shaders/fdsr_decode.wgsl"), true, "uurrrrwr"),
    shader("fdsr_reuse", include_str!("../shaders/fdsr_reuse.wgsl"), true, "uuruwrww"),
    shader("uniform", include_str!("../shaders/uniform.wgsl"), true, "uurwwwww"),
    shader("division", include_str!("../shaders/division.wgsl"), true, "uurwwwwww"),
    shader("gemm", include_str!("../shaders/gemm.wgsl"), false, "urrrw"),
    shader("ops_elementwise", include_str!("../shaders/ops_elementwise.wgsl"), false, "urrww"),
    shader("ops_pool", include_str!("../shaders/ops_pool.wgsl"), false, "urrww"),
    shader("ops_bn", include_str!("../shaders/ops_bn.wgsl"), false, "urrrwwwww"),
    shader("ops_loss", include_str!("../shaders/ops_loss.wgsl"), false, "urrwww"),
    shader("ops_optim", include_str!("../shaders/ops_optim.wgsl"), false, "uwrww"),
    shader("fakequant", include_str!("../shaders/fakequant.wgsl"), false, "urww"),
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
    info(name).map(|s| if s.common { format!("{COMMON}\n{}", s.body) } else { s.body.to_string() })
}
