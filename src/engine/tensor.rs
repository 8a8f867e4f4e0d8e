//! GPU tensors of the engine: a pooled f32 buffer (or an aligned range of one: a view of an arena),
//! its shape and its memory category.

use std::sync::Arc;

use crate::error::{FdsrError, Result};
use crate::gpu::kernel::Bindable;
use crate::gpu::{read_buffer, Category, GpuContext, PooledBuffer};

/// Usage of every engine buffer: bindable as storage, copyable both ways.
pub const USAGE: wgpu::BufferUsages = crate::gpu::STORAGE_USAGE;

/// An f32 tensor on the device (row-major; rank 4 is NCHW). Cloning shares the buffer.
///
/// Buffers come from the context's pool and are **not** cleared: a kernel writing a new tensor
/// must write every element. A view ([`Tensor::view`]) is a range of another tensor's buffer
/// (the model's parameters in the optimizer's arena): kernels bind it through [`Bindable`],
/// which passes its offset and size.
#[derive(Clone)]
pub struct Tensor {
    buf: Arc<PooledBuffer>,
    /// Byte offset of a view's first value; `None`: the tensor starts its buffer and binds all of it.
    view: Option<u64>,
    id: u64,
    shape: Vec<usize>,
    sign: Sign,
}

/// The id of the next tensor made: every allocation gets its own, never reused.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What is known of the sign of a tensor's values, for mask-aware storage of saved activations.
#[derive(Clone, Debug, Default)]
pub enum Sign {
    /// Nothing.
    #[default]
    Any,
    /// Every value is ≥ 0 (a pooled ReLU output).
    NonNegative,
    /// Every value is ≥ 0 and the packed mask (bit `i` of word `j` set ⇔ value `32j + i` > 0,
    /// as ReLU keeps it) is on the device: a ReLU output.
    Masked(Box<Tensor>),
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor{:?}", self.shape)
    }
}

/// Number of values of `shape`.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Tensor {
    /// A tensor of `shape` whose contents are undefined until a kernel writes them.
    // On wasm32 wgpu resources are neither Send nor Sync; the Arc only shares ownership there.
    #[allow(clippy::arc_with_non_send_sync)]
    pub fn uninit(ctx: &GpuContext, shape: &[usize], category: Category) -> Tensor {
        let bytes = (numel(shape) as u64 * 4).max(4);
        Tensor {
            buf: Arc::new(ctx.pool.get(&ctx.device, category, bytes, USAGE)),
            view: None,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            shape: shape.to_vec(),
            sign: Sign::Any,
        }
    }

    /// A tensor holding `data`, uploaded before the next submitted work.
    pub fn from_slice(ctx: &GpuContext, data: &[f32], shape: &[usize], category: Category) -> Result<Tensor> {
        if numel(shape) != data.len() {
            return Err(FdsrError::InvalidTensor(format!("shape {shape:?} does not hold {} values", data.len())));
        }
        let t = Tensor::uninit(ctx, shape, category);
        if !data.is_empty() {
            ctx.write_buffer(t.buffer(), 0, bytemuck::cast_slice(data));
        }
        Ok(t)
    }

    /// Overwrites the contents with `data` (same length), before the next submitted work.
    pub fn write(&self, ctx: &GpuContext, data: &[f32]) -> Result<()> {
        if data.len() != self.numel() {
            return Err(FdsrError::InvalidTensor(format!(
                "{} values cannot overwrite a tensor of shape {:?}",
                data.len(),
                self.shape
            )));
        }
        ctx.write_buffer(&self.buf, self.offset(), bytemuck::cast_slice(data));
        Ok(())
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of values.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// What is known of the values' sign.
    pub fn sign(&self) -> &Sign {
        &self.sign
    }

    /// The same tensor, known to have `sign`.
    pub fn with_sign(mut self, sign: Sign) -> Tensor {
        self.sign = sign;
        self
    }

    /// An id shared by this tensor's clones and reshapes and by no other tensor, ever (unlike
    /// its buffer, which the pool hands out again once it is dropped).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `true` when no other tensor (clone or reshape) shares this one's buffer, so a kernel may
    /// overwrite it in place.
    pub fn is_unique(&self) -> bool {
        std::sync::Arc::strong_count(&self.buf) == 1
    }

    /// The device buffer of a tensor that is not a view (it may be larger than the tensor).
    /// Kernels bind tensors through [`Bindable`] instead, which also serves views; copies of a view
    /// go through [`Tensor::copy_to`].
    pub fn buffer(&self) -> &wgpu::Buffer {
        debug_assert!(self.view.is_none(), "the whole buffer of a view of {:?} is not its own", self.shape);
        &self.buf
    }

    /// Byte offset of the first value in the buffer (0 unless a view).
    pub fn offset(&self) -> u64 {
        self.view.unwrap_or(0)
    }

    /// Whether this tensor is a range of another's buffer.
    pub fn is_view(&self) -> bool {
        self.view.is_some()
    }

    /// The tensor of `shape` whose values are this one's from value `first` on: same buffer, its
    /// own id. The byte offset must respect `align` (the device's storage-binding alignment).
    pub fn view(&self, first: usize, shape: &[usize], align: u64) -> Result<Tensor> {
        let offset = self.offset() + first as u64 * 4;
        if first + numel(shape) > self.numel() || !offset.is_multiple_of(align.max(1)) {
            return Err(FdsrError::InvalidTensor(format!(
                "no view {shape:?} at value {first} of {:?} (byte offset {offset}, alignment {align})",
                self.shape
            )));
        }
        Ok(Tensor {
            buf: self.buf.clone(),
            view: Some(offset),
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            shape: shape.to_vec(),
            sign: Sign::Any,
        })
    }

    /// Records copying every value into `dst` (as many values, in another buffer; views included).
    pub fn copy_to(&self, enc: &mut wgpu::CommandEncoder, dst: &Tensor) -> Result<()> {
        if dst.numel() != self.numel() || Arc::ptr_eq(&self.buf, &dst.buf) {
            return Err(FdsrError::InvalidTensor(format!(
                "cannot copy {:?} into {:?} (as many values, another buffer)",
                self.shape, dst.shape
            )));
        }
        enc.copy_buffer_to_buffer(&self.buf, self.offset(), &dst.buf, dst.offset(), self.numel() as u64 * 4);
        Ok(())
    }

    /// Whether `other`'s values overlap this tensor's in one buffer.
    pub fn overlaps(&self, other: &Tensor) -> bool {
        let (a, b) = (self.offset(), other.offset());
        let (ea, eb) = (a + self.numel().max(1) as u64 * 4, b + other.numel().max(1) as u64 * 4);
        Arc::ptr_eq(&self.buf, &other.buf) && a < eb && b < ea
    }

    /// Counts the tensor's buffer in `category` from now on (shared by every clone).
    pub fn set_category(&self, category: Category) {
        self.buf.set_category(category);
    }

    /// The same data seen with another shape of as many values.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape) != self.numel() {
            return Err(FdsrError::InvalidTensor(format!("cannot reshape {:?} to {shape:?}", self.shape)));
        }
        Ok(Tensor {
            buf: self.buf.clone(),
            view: self.view,
            id: self.id,
            shape: shape.to_vec(),
            sign: self.sign.clone(),
        })
    }

    /// Reads the values back (submits nothing itself: work recorded in an unsubmitted encoder is not
    /// seen).
    pub async fn to_vec(&self, ctx: &GpuContext) -> Result<Vec<f32>> {
        let bytes = read_buffer(ctx, &self.buf, self.offset(), self.numel() as u64 * 4).await?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }
}

impl Bindable for Tensor {
    /// The whole buffer, or a view's range (its values, at least 4 bytes).
    fn binding(&self) -> wgpu::BufferBinding<'_> {
        match self.view {
            None => self.buf.as_entire_buffer_binding(),
            Some(offset) => wgpu::BufferBinding {
                buffer: &self.buf,
                offset,
                size: wgpu::BufferSize::new((self.numel() as u64 * 4).max(4)),
            },
        }
    }
}
