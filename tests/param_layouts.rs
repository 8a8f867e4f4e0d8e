//! Every `#[repr(C)]` parameter struct has exactly the size of its WGSL twin (naga's layouter),
//! and the buffer pool's accounting adds up.

use fdsr::codec::resident::{fdsr as rfdsr, flat};
use fdsr::codec::{reuse_gpu, tables};
use fdsr::engine::ops::{batchnorm, elementwise, fakequant, gate, loss, optim, pool};
use std::mem::size_of;

fn wgsl_struct_size(shader: &str, name: &str) -> u32 {
    let src = fdsr::shaders::source(shader).expect("registered shader");
    let module = naga::front::wgsl::parse_str(&src).expect("parses");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layout");
    let (handle, _) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("struct {name} not in shader {shader}"));
    layouter[handle].size
}

#[test]
fn rust_param_structs_match_wgsl() {
    let cases: [(&str, &str, usize); 19] = [
        ("gemm", "GemmParams", size_of::<fdsr::engine::gemm::GemmParams>()),
        ("fdsr_reuse", "ReuseParams", size_of::<reuse_gpu::ReuseParams>()),
        ("fdsr_reuse", "Hyper", size_of::<reuse_gpu::Hyper>()),
        ("fdsr_reuse", "Tables", size_of::<tables::Tables>()),
        ("fdsr_encode", "FdsrParams", size_of::<rfdsr::EncodeParams>()),
        ("fdsr_decode", "DecodeParams", size_of::<rfdsr::DecodeParams>()),
        ("fdsr_alloc", "AllocParams", size_of::<rfdsr::AllocParams>()),
        ("fdsr_encode", "Tables", size_of::<tables::Tables>()),
        ("uniform", "UniformParams", size_of::<flat::UniformParams>()),
        ("division", "DivisionParams", size_of::<flat::DivisionParams>()),
        ("copy", "CopyParams", size_of::<[u32; 4]>()),
        ("ops_elementwise", "EwParams", size_of::<elementwise::EwParams>()),
        ("ops_pool", "PoolParams", size_of::<pool::PoolParams>()),
        ("ops_bn", "BnParams", size_of::<batchnorm::BnGpuParams>()),
        ("ops_loss", "LossParams", size_of::<loss::LossParams>()),
        ("ops_optim", "OptimParams", size_of::<optim::OptimParams>()),
        ("fakequant", "FqParams", size_of::<fakequant::FqParams>()),
        ("gate_forward", "GateParams", size_of::<gate::GateParams>()),
        ("gate_backward", "GateParams", size_of::<gate::GateParams>()),
    ];
    for (shader, name, rust) in cases {
        assert_eq!(wgsl_struct_size(shader, name) as usize, rust, "{shader}::{name} vs its Rust mirror");
    }
}
