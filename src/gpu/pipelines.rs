//! Pipeline cache: every compute pipeline is built once per context, keyed by shader, entry and
//! the values of its pipeline-overridable constants.

use crate::error::{FdsrError, Result};
use crate::shaders;
use std::collections::HashMap;
use std::sync::Mutex;

struct Module {
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
}

/// Compiled shader modules and compute pipelines.
#[derive(Default)]
pub struct PipelineCache {
    modules: Mutex<HashMap<&'static str, Module>>,
    pipelines: Mutex<HashMap<PipelineKey, wgpu::ComputePipeline>>,
}

/// Shader, entry point and override constants (name, value bits) of one pipeline.
type PipelineKey = (&'static str, &'static str, Vec<(&'static str, u64)>);

/// Values of a shader's `override` declarations, by name (empty: the shader's defaults).
pub type Constants<'a> = &'a [(&'static str, f64)];

fn gpu_err(message: String) -> FdsrError {
    FdsrError::Gpu { stage: "pipeline cache".into(), message }
}

fn build_module(device: &wgpu::Device, name: &'static str) -> Result<Module> {
    let info = shaders::info(name).ok_or_else(|| gpu_err(format!("no shader named {name}")))?;
    let src = shaders::source(name).ok_or_else(|| gpu_err(format!("no shader named {name}")))?;
    let entries: Vec<wgpu::BindGroupLayoutEntry> = info
        .layout
        .bytes()
        .enumerate()
        .map(|(i, k)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match k {
                    b'u' => wgpu::BufferBindingType::Uniform,
                    b'r' => wgpu::BufferBindingType::Storage { read_only: true },
                    _ => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    let bgl =
        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(name), entries: &entries });
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(name),
        bind_group_layouts: &[Some(&bgl)],
        immediate_size: 0,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
    Ok(Module { module, layout })
}

impl PipelineCache {
    /// The pipeline of `entry` in the registered shader `shader` (built on first use).
    pub fn get(
        &self,
        device: &wgpu::Device,
        shader: &'static str,
        entry: &'static str,
    ) -> Result<wgpu::ComputePipeline> {
        self.get_with(device, shader, entry, &[])
    }

    /// The pipeline of `entry` in `shader` with its override `constants` set (built on first use).
    pub fn get_with(
        &self,
        device: &wgpu::Device,
        shader: &'static str,
        entry: &'static str,
        constants: Constants<'_>,
    ) -> Result<wgpu::ComputePipeline> {
        let key = (shader, entry, constants.iter().map(|&(n, v)| (n, v.to_bits())).collect());
        let mut pipes = self.pipelines.lock().map_err(|_| gpu_err("lock poisoned".into()))?;
        if let Some(p) = pipes.get(&key) {
            return Ok(p.clone());
        }
        let mut modules = self.modules.lock().map_err(|_| gpu_err("lock poisoned".into()))?;
        if !modules.contains_key(shader) {
            modules.insert(shader, build_module(device, shader)?);
        }
        let m = &modules[shader];
        let timer = Trace::start();
        let p = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: Some(&m.layout),
            module: &m.module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
            cache: None,
        });
        timer.end(shader, entry, constants);
        pipes.insert(key, p.clone());
        Ok(p)
    }
}

/// With `FDSR_TRACE_PIPELINES` set, natively, each pipeline's build time goes to stderr (how long
/// the driver compiles it: SwiftShader, the browser's software adapter, can be run natively with
/// `VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json`). On the web the build finishes
/// in the browser's GPU process after the call returns, so there is nothing to time here.
struct Trace(#[cfg(not(target_arch = "wasm32"))] Option<std::time::Instant>);

impl Trace {
    fn start() -> Trace {
        #[cfg(not(target_arch = "wasm32"))]
        return Trace(std::env::var_os("FDSR_TRACE_PIPELINES").map(|_| std::time::Instant::now()));
        #[cfg(target_arch = "wasm32")]
        Trace()
    }

    fn end(self, shader: &str, entry: &str, constants: Constants<'_>) {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(t0) = self.0 {
            eprintln!("pipeline {shader}/{entry} {constants:?}: {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
        }
        #[cfg(target_arch = "wasm32")]
        let _ = (self, shader, entry, constants);
    }
}
