//! What the codec story looks at: one layer's output on the first test images, computed on the
//! GPU by the running model in evaluation and read back. The run asks for it between steps; the
//! story panel only draws it.

use fdsr::data::Dataset;
use fdsr::engine::batch::make_batch;
use fdsr::engine::layers::Pass;
use fdsr::engine::Session;
use fdsr::gpu::Category;
use fdsr::GpuContext;

/// Images run through the model for the codec story.
pub const IMAGES: usize = 4;

/// A layer's output on the story's images.
#[derive(Clone, Debug)]
pub struct Activation {
    /// Top-level layer whose output this is.
    pub layer: usize,
    /// `[N, C, H, W]`.
    pub shape: [usize; 4],
    /// Values.
    pub data: Vec<f32>,
}

/// Runs layers `0..=layer` in evaluation (full-precision compute) on the first test images and
/// reads the output back.
/// Errors when that output is not 4-D (e.g. the classifier).
pub async fn read_activation(
    ctx: &GpuContext,
    s: &mut Session,
    test: &Dataset,
    layer: usize,
) -> fdsr::Result<Activation> {
    let idx: Vec<usize> = (0..IMAGES.min(test.len())).collect();
    let (images, _) = make_batch(test, &idx, s.norm, None)?;
    let side = fdsr::engine::model::INPUT_SIDE;
    let mut h = fdsr::engine::Tensor::from_slice(ctx, &images, &[idx.len(), 1, side, side], Category::Workspace)?;
    let t = &mut s.trainer;
    let out = ctx
        .scoped("inspect", || {
            let mut enc = ctx.device.create_command_encoder(&Default::default());
            for i in 0..=layer {
                let mut p =
                    Pass { ctx, enc: &mut enc, saved: &mut t.saved, train: false, quant: None, recalibrate: None };
                h = t.model.forward_layer(i, &mut p, h.clone())?;
            }
            ctx.queue.submit([enc.finish()]);
            Ok::<_, fdsr::FdsrError>(h.clone())
        })
        .await??;
    let shape: [usize; 4] = out.shape().try_into().map_err(|_| {
        fdsr::FdsrError::InvalidConfig(format!("layer {layer}'s output {:?} is not an activation map", out.shape()))
    })?;
    Ok(Activation { layer, shape, data: out.to_vec(ctx).await? })
}
