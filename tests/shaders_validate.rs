//! Every registered shader parses and validates with naga under WebGPU's capabilities (plus
//! WebGPU's `subgroups` feature for the subgroup variants of reducing shaders), and shaders with
//! override constants also translate to SPIR-V with every value the engine sets. The
//! cooperative-matrix GEMM (native only) validates with exactly the capabilities it needs
//! (cooperative matrices, f16, subgroups) and emits SPIR-V.

use fdsr::shaders::Prelude;
use naga::valid::{Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator};

/// A validator with WebGPU's capabilities, and subgroups when `subgroups`.
fn validator(subgroups: bool) -> Validator {
    if !subgroups {
        return Validator::new(ValidationFlags::all(), Capabilities::empty());
    }
    let mut v = Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP);
    v.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::all());
    v
}

#[test]
fn every_shader_validates_for_webgpu() {
    let mut count = 0;
    for info in fdsr::shaders::SHADERS {
        let (name, src) = (info.name, fdsr::shaders::source(info.name).expect("registered"));
        let module =
            naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        if matches!(info.prelude, Prelude::GemmCoop { .. }) {
            // Not a WebGPU shader: checked by `coop_gemm_validates_and_emits_spirv`.
            assert!(validator(false).validate(&module).is_err(), "{name} validates for WebGPU");
            continue;
        }
        let subgroups = info.prelude == Prelude::ReduceSubgroup;
        validator(subgroups).validate(&module).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        if subgroups {
            // The same shader without the feature is refused: the variants really differ.
            assert!(validator(false).validate(&module).is_err(), "{name} validates without subgroups");
        }
        count += 1;
    }
    assert!(count >= 4, "only {count} shaders registered");
}

#[test]
fn layouts_match_declared_bindings() {
    for info in fdsr::shaders::SHADERS {
        let src = fdsr::shaders::source(info.name).expect("registered");
        let module = naga::front::wgsl::parse_str(&src).expect("parses");
        let mut bindings: Vec<(u32, char)> = module
            .global_variables
            .iter()
            .filter_map(|(_, g)| {
                let b = g.binding.as_ref()?;
                let kind = match g.space {
                    naga::AddressSpace::Uniform => 'u',
                    naga::AddressSpace::Storage { access } if !access.contains(naga::StorageAccess::STORE) => 'r',
                    _ => 'w',
                };
                Some((b.binding, kind))
            })
            .collect();
        bindings.sort();
        let declared: Vec<(u32, char)> = info.layout.chars().enumerate().map(|(i, c)| (i as u32, c)).collect();
        assert_eq!(bindings, declared, "shader {} declares bindings that differ from its registry layout", info.name);
    }
}

#[test]
fn the_rng_is_defined_once() {
    // Shaders draw random numbers only through the RNG prelude, never a copy of it.
    for info in fdsr::shaders::SHADERS {
        assert!(!info.body.contains("fn hash32") && !info.body.contains("fn rng24"), "{} copies the RNG", info.name);
    }
    assert!(!fdsr::shaders::COMMON.contains("fn hash32"), "common.wgsl copies the RNG");
}

/// The GEMM shader validates and translates to SPIR-V with every tile height the engine sets
/// through its `TM` override (override-sized workgroup arrays included).
#[test]
fn gemm_tiles_validate_and_translate() {
    let src = fdsr::shaders::source("gemm").expect("registered");
    let module = naga::front::wgsl::parse_str(&src).expect("parses");
    let info = Validator::new(ValidationFlags::all(), Capabilities::empty()).validate(&module).expect("validates");
    for tm in fdsr::engine::gemm::TILE_ROWS {
        let mut constants = naga::back::PipelineConstants::default();
        constants.insert("TM".into(), tm as f64);
        let (m, i) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
            .unwrap_or_else(|e| panic!("TM={tm}: {e}"));
        naga::back::spv::write_vec(&m, &i, &naga::back::spv::Options::default(), None)
            .unwrap_or_else(|e| panic!("TM={tm}: {e}"));
    }
}

/// The capabilities the cooperative-matrix GEMM needs: cooperative matrices, f16 and subgroups
/// (its `subgroup_id` / `num_subgroups` builtins).
fn coop_validator() -> Validator {
    let caps = Capabilities::COOPERATIVE_MATRIX | Capabilities::SHADER_FLOAT16 | Capabilities::SUBGROUP;
    let mut v = Validator::new(ValidationFlags::all(), caps);
    v.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::all());
    v
}

/// The cooperative-matrix GEMM, with 16×16 and with 8×8 fragments, validates with its
/// capabilities (and not without any one of them), and emits SPIR-V, with the cooperative-matrix
/// capability, for every tile height and number of rounds the engine sets.
#[test]
fn coop_gemm_validates_and_emits_spirv() {
    for (name, fragment) in [("gemm_coop", 16), ("gemm_coop8", 8)] {
        assert_eq!(fdsr::shaders::info(name).unwrap().prelude, Prelude::GemmCoop { fragment });
        coop_gemm_checks(name, fragment);
    }
}

fn coop_gemm_checks(name: &str, fragment: u32) {
    let src = fdsr::shaders::source(name).expect("registered");
    let frag = format!("coop_mat{fragment}x{fragment}<");
    assert_eq!(src.matches(frag.as_str()).count(), 3, "{name}: the three fragment types");
    assert!(src.contains(&format!("const D: u32 = {fragment}u;")), "{name}: D");
    let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
    let info = coop_validator().validate(&module).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)));
    for missing in [Capabilities::COOPERATIVE_MATRIX, Capabilities::SHADER_FLOAT16, Capabilities::SUBGROUP] {
        let caps = (Capabilities::COOPERATIVE_MATRIX | Capabilities::SHADER_FLOAT16 | Capabilities::SUBGROUP) - missing;
        let mut v = Validator::new(ValidationFlags::all(), caps);
        v.subgroup_stages(ShaderStages::COMPUTE).subgroup_operations(SubgroupOperationSet::all());
        assert!(v.validate(&module).is_err(), "validates without {missing:?}");
    }
    let entries: Vec<&str> = module.entry_points.iter().map(|e| e.name.as_str()).collect();
    for entry in ["matmul_strided", "conv_forward", "conv_backward_data", "conv_backward_weight"] {
        assert!(entries.contains(&entry), "no entry point {entry}: {entries:?}");
    }
    for tm in fdsr::engine::gemm::TILE_ROWS {
        for rounds in [1, 2, 4, 16] {
            let mut constants = naga::back::PipelineConstants::default();
            constants.insert("TM".into(), tm as f64);
            constants.insert("ROUNDS".into(), rounds as f64);
            let (m, i) = naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
                .unwrap_or_else(|e| panic!("TM={tm}: {e}"));
            let words = naga::back::spv::write_vec(&m, &i, &naga::back::spv::Options::default(), None)
                .unwrap_or_else(|e| panic!("TM={tm}, ROUNDS={rounds}: {e}"));
            // OpCapability (17) CooperativeMatrixKHR (6022) is declared.
            let has_coop = words.windows(2).any(|w| w[0] == (2 << 16 | 17) && w[1] == 6022);
            assert!(has_coop, "TM={tm}: no CooperativeMatrixKHR capability in the SPIR-V");
        }
    }
}
