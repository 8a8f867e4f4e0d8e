//! `GpuContext`: adapter choice (honoring `WGPU_BACKEND` / `WGPU_ADAPTER_NAME`), device, limits,
//! and what the adapter offers (features, cooperative-matrix configurations).

use super::coop::{ComputePath, CoopOffer};
use super::{BufferPool, PipelineCache, Profiler, TransferCounts, Transfers};
use crate::error::{FdsrError, Result};

/// Options for creating a context.
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Use at most this many bytes per storage binding (tests lower it to force chunking).
    pub max_binding_bytes: Option<u64>,
    /// Leave `SUBGROUP` off even where the adapter offers it, so reductions take their
    /// workgroup-memory path (tests force it to check both).
    pub no_subgroups: bool,
    /// Workgroups a reduction-heavy kernel (a split matrix product, a batch-norm statistic) aims
    /// to spread over; `None`: [`GPU_TARGET_GROUPS`] on a GPU, 1 on a CPU adapter (tests set it
    /// to run a GPU's plans on lavapipe).
    pub target_groups: Option<usize>,
    /// Leave cooperative matrices off even where the adapter offers them (`--compute fp32`: the
    /// experimental feature is then not even requested).
    pub no_cooperative_matrix: bool,
    /// Give every matrix product this tile height (one of [`crate::shaders::GEMM_TILE_ROWS`]) instead of
    /// the one that pads it least: fewer GEMM pipelines to build (each entry once, not once per
    /// height), for a page that compiles them all before its first step (the browser visualizer).
    pub tile_rows: Option<usize>,
    /// Take the compact variant of a kernel that has one (loops where the default unrolls: the
    /// same results, a fraction of the pipeline's build time, slower to run), for the same page.
    pub compact_shaders: bool,
}

/// Workgroups a GPU should have in flight before a reduction stops splitting: about two waves
/// of a large GPU (an H200 holds roughly a thousand of the GEMM's 64-invocation workgroups).
pub const GPU_TARGET_GROUPS: usize = 2048;

/// A device and queue plus the caches every fdsr entry point needs.
pub struct GpuContext {
    /// The wgpu device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says of itself.
    pub info: wgpu::AdapterInfo,
    /// The limits the device was created with.
    pub limits: wgpu::Limits,
    /// Compiled pipelines, built once.
    pub pipelines: PipelineCache,
    /// Pooled buffers with byte accounting by category.
    pub pool: BufferPool,
    /// Optional timing of every compute pass (off unless enabled).
    pub profiler: Profiler,
    /// Bytes uploaded and read back, host waits and passes recorded.
    pub transfers: Transfers,
    /// Everything the adapter offers (the device enables only what fdsr uses).
    pub adapter_features: wgpu::Features,
    /// The adapter's cooperative-matrix (tensor core) configurations; empty where it has none.
    pub cooperative_matrix: Vec<wgpu::CooperativeMatrixProperties>,
    max_binding: u64,
    compute: std::sync::Mutex<ComputePath>,
    constants: std::sync::Mutex<std::collections::HashMap<&'static str, wgpu::Buffer>>,
    target_groups: usize,
    tile_rows: Option<usize>,
    compact_shaders: bool,
}

impl GpuContext {
    /// Creates a context on the adapter chosen by the environment (or the default one).
    pub async fn new() -> Result<Self> {
        Self::with_options(ContextOptions::default()).await
    }

    /// Creates a context with explicit options.
    pub async fn with_options(opts: ContextOptions) -> Result<Self> {
        let rows = crate::shaders::GEMM_TILE_ROWS;
        if let Some(tm) = opts.tile_rows.filter(|tm| !rows.contains(tm)) {
            return Err(FdsrError::InvalidConfig(format!("tile height {tm}: the GEMM is built for {rows:?}")));
        }
        // Vulkan, Metal, DX12 or the browser's WebGPU unless WGPU_BACKEND says otherwise (GL has no
        // compute shaders worth the name and probes the display).
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(desc.with_env());
        let adapter = pick_adapter(&instance).await?;
        let info = adapter.get_info();
        let mut limits = adapter.limits();
        // Compute only: keep the adapter's storage limits, ask for nothing exotic.
        limits.max_storage_buffers_per_shader_stage = limits.max_storage_buffers_per_shader_stage.min(8);
        let adapter_features = adapter.features();
        let cooperative_matrix = adapter.cooperative_matrix_properties();
        let coop = super::coop::coop_features(adapter_features, !opts.no_subgroups && !opts.no_cooperative_matrix);
        let features = adapter_features & (wgpu::Features::TIMESTAMP_QUERY | subgroups_wanted(&opts) | coop);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("fdsr"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: super::coop::experimental_token(features),
                ..Default::default()
            })
            .await
            .map_err(|e| FdsrError::Device { adapter: info.name.clone(), reason: e.to_string() })?;
        let target_groups = opts.target_groups.unwrap_or(default_target_groups(info.device_type)).max(1);
        let device_max = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let max_binding = opts.max_binding_bytes.map_or(device_max, |m| m.min(device_max)).max(4096);
        Ok(Self {
            device,
            queue,
            info,
            limits,
            pipelines: PipelineCache::default(),
            pool: BufferPool::default(),
            profiler: Profiler::default(),
            transfers: Transfers::default(),
            adapter_features,
            cooperative_matrix,
            max_binding,
            compute: Default::default(),
            constants: Default::default(),
            target_groups,
            tile_rows: opts.tile_rows,
            compact_shaders: opts.compact_shaders,
        })
    }

    /// Workgroups a reduction aims to spread over (see [`ContextOptions::target_groups`]).
    pub fn target_groups(&self) -> usize {
        self.target_groups
    }

    /// The one tile height every matrix product takes, if the options fixed it
    /// ([`ContextOptions::tile_rows`]).
    pub fn tile_rows(&self) -> Option<usize> {
        self.tile_rows
    }

    /// Whether kernels with a compact variant take it ([`ContextOptions::compact_shaders`]).
    pub fn compact_shaders(&self) -> bool {
        self.compact_shaders
    }

    /// The path the GEMMs take now (fp32 unless `engine::gemm::select_compute` chose cooperative
    /// matrices).
    pub fn compute_path(&self) -> ComputePath {
        *self.compute.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why cooperative matrices cannot run on this device, or the path they take.
    pub fn coop_path(&self) -> std::result::Result<ComputePath, String> {
        super::coop::coop_path(&CoopOffer {
            features: self.device.features(),
            configs: &self.cooperative_matrix,
            subgroup_sizes: (self.info.subgroup_min_size, self.info.subgroup_max_size),
            workgroup_bytes: self.limits.max_compute_workgroup_storage_size,
            invocations: self.limits.max_compute_invocations_per_workgroup,
        })
    }

    /// Sets the GEMMs' path; cooperative matrices only where [`GpuContext::coop_path`] allows
    /// them (an error naming why otherwise).
    pub fn set_compute_path(&self, path: ComputePath) -> Result<()> {
        if path != ComputePath::Fp32 {
            let possible = self.coop_path().map_err(|why| FdsrError::Gpu {
                stage: "compute path".into(),
                message: format!("cooperative matrices cannot run on {}: {why}", self.adapter_description()),
            })?;
            if possible != path {
                return Err(FdsrError::Gpu {
                    stage: "compute path".into(),
                    message: format!("{path:?} asked for, this device runs {possible:?}"),
                });
            }
        }
        *self.compute.lock().unwrap_or_else(|e| e.into_inner()) = path;
        Ok(())
    }

    /// Whether the device has subgroup operations (reductions then use `subgroupAdd`).
    pub fn has_subgroups(&self) -> bool {
        self.device.features().contains(wgpu::Features::SUBGROUP)
    }

    /// Adapter name and backend, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)`.
    pub fn adapter_description(&self) -> String {
        // Browsers may hide the adapter's name.
        let name = if self.info.name.is_empty() { "unnamed adapter" } else { &self.info.name };
        format!("{name} ({:?})", self.info.backend)
    }

    /// Largest storage binding used per dispatch; larger tensors are processed in chunks.
    pub fn max_binding_bytes(&self) -> u64 {
        self.max_binding
    }

    /// Whether the device can write GPU timestamps.
    pub fn has_timestamps(&self) -> bool {
        self.device.features().contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The uniform buffer named `label`, made from `contents()` (uploaded) on first use and shared
    /// afterwards: for constants such as the codec's tables, which every encode binds.
    pub fn constant_uniform(&self, label: &'static str, contents: impl FnOnce() -> Vec<u8>) -> wgpu::Buffer {
        let mut map = self.constants.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(label)
            .or_insert_with(|| {
                use wgpu::util::DeviceExt;
                let data = contents();
                self.transfers.upload(data.len() as u64);
                self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: &data,
                    usage: wgpu::BufferUsages::UNIFORM,
                })
            })
            .clone()
    }

    /// Writes `data` into `buffer` at `offset` before the next submitted work (counted as uploaded).
    pub fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        self.transfers.upload(data.len() as u64);
        self.queue.write_buffer(buffer, offset, data);
    }

    /// Submits the work recorded in `enc` (counted).
    pub fn submit(&self, enc: wgpu::CommandEncoder) -> wgpu::SubmissionIndex {
        self.transfers.submit();
        let commands = enc.finish();
        #[cfg(not(target_arch = "wasm32"))]
        let start = std::time::Instant::now();
        let index = self.queue.submit([commands]);
        #[cfg(not(target_arch = "wasm32"))]
        self.transfers.submit_time(start.elapsed());
        index
    }

    /// Blocks until submitted work and map callbacks are done (natively; a no-op on the web,
    /// where awaiting the map callback is the wait), counting one host wait.
    pub fn wait_for_device(&self) -> Result<()> {
        self.transfers.host_wait();
        super::wait_for_map(&self.device)
    }

    /// Seconds the host has spent inside queue submissions so far (natively; 0 on the web).
    pub fn seconds_in_submit(&self) -> f64 {
        self.transfers.seconds_in_submit()
    }

    /// The transfer counters now ([`TransferCounts::since`] gives a window).
    pub fn transfer_counts(&self) -> TransferCounts {
        self.transfers.snapshot()
    }

    /// Runs `f` inside validation and out-of-memory error scopes; a caught error becomes `Err`.
    pub async fn scoped<T>(&self, stage: &str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let v = val.pop().await;
        let o = oom.pop().await;
        match v.or(o) {
            Some(e) => Err(FdsrError::Gpu { stage: stage.to_string(), message: e.to_string() }),
            None => Ok(out),
        }
    }
}

/// A CPU adapter (lavapipe, SwiftShader, WARP) runs a few workgroups at a time, one per core, and
/// pays for every split of a reduction (measured on lavapipe: a weight gradient split in two took
/// 1.5–2× as long as unsplit); a GPU needs thousands of workgroups in flight.
fn default_target_groups(device: wgpu::DeviceType) -> usize {
    if device == wgpu::DeviceType::Cpu {
        1
    } else {
        GPU_TARGET_GROUPS
    }
}

/// `SUBGROUP` where fdsr may use it: natively, unless the options turn it off. In the browser the
/// reductions keep their workgroup-memory path: WebGPU wants `enable subgroups;` in the shader,
/// which naga 30 (the native shader front end) does not parse, so one source cannot serve both.
fn subgroups_wanted(opts: &ContextOptions) -> wgpu::Features {
    if cfg!(target_arch = "wasm32") || opts.no_subgroups {
        wgpu::Features::empty()
    } else {
        wgpu::Features::SUBGROUP
    }
}

async fn pick_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter> {
    #[cfg(not(target_arch = "wasm32"))]
    if let Ok(name) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted = name.to_lowercase();
        let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        let adapters = instance.enumerate_adapters(backends).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&wanted)).ok_or_else(|| {
            FdsrError::NoAdapter {
                detail: format!(" named like '{name}' (WGPU_ADAPTER_NAME; adapters present: {names:?})"),
            }
        });
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        })
        .await
        .map_err(|e| {
            let backend = std::env::var("WGPU_BACKEND").map(|b| format!(" for WGPU_BACKEND={b}")).unwrap_or_default();
            FdsrError::NoAdapter { detail: format!("{backend} ({e})") }
        })
}
