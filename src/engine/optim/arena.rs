//! The parameter arena: every trainable parameter, its gradient and its optimizer state as views of
//! four device buffers, so that one dispatch updates them all.
//!
//! Layout: parameters that take weight decay first, then the others, each in the model's visit
//! order and starting at a multiple of the device's storage-binding alignment (256 bytes on most
//! adapters, the size the buffer pool rounds every buffer to anyway); the gaps stay zero, and the
//! optimizer leaves zeros unchanged. Packing records one copy per parameter and gradient, once.

use crate::engine::model::Model;
use crate::engine::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::{Category, GpuContext};

/// Where one parameter lies in the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The parameter's name.
    pub name: String,
    /// Index of its first value in every arena buffer.
    pub first: usize,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Ids of the model's value and gradient views (checked before each update).
    ids: (u64, u64),
}

/// Four buffers of one layout: values, gradients, first and (AdamW) second optimizer moments.
pub struct ParamArena {
    /// All parameter values.
    pub values: Tensor,
    /// All gradients.
    pub grads: Tensor,
    /// SGD momentum or AdamW's first moments (zeros at first).
    pub first: Tensor,
    /// AdamW's second moments (zeros at first).
    pub second: Option<Tensor>,
    /// Values `[0, decayed)` belong to parameters with weight decay.
    pub decayed: usize,
    /// The trainable parameters, in the model's visit order.
    pub slots: Vec<Slot>,
}

/// `(name, shape, decay)` of each trainable parameter in visit order, with its first index:
/// decayed parameters first, each aligned to `align` values. Returns the slots' starts, the end of
/// the decayed range and the total length (a multiple of `align`, at least `align`).
pub fn layout(params: &[(String, Vec<usize>, bool)], align: usize) -> (Vec<usize>, usize, usize) {
    let align = align.max(1);
    let mut first = vec![0; params.len()];
    let mut end = 0;
    let mut decayed = 0;
    for pass in [true, false] {
        for (i, (_, shape, decay)) in params.iter().enumerate() {
            if *decay == pass {
                first[i] = end;
                end = (end + shape.iter().product::<usize>()).next_multiple_of(align);
            }
        }
        if pass {
            decayed = end;
        }
    }
    (first, decayed, end.max(align))
}

impl ParamArena {
    /// Moves every trainable parameter of `model` (value and gradient) into a new arena, replacing
    /// the model's tensors by views of it, with zero optimizer state (`second` for AdamW). Records
    /// and submits the copies (queued uploads of the parameters run first).
    pub fn pack(ctx: &GpuContext, model: &mut Model, second: bool) -> Result<ParamArena> {
        let mut params = Vec::new();
        model.visit(&mut |p| {
            if p.grad.is_some() {
                params.push((p.name.clone(), p.value.shape().to_vec(), p.decay));
            }
        });
        let align_bytes = u64::from(ctx.device.limits().min_storage_buffer_offset_alignment).max(4);
        let (starts, decayed, total) = layout(&params, (align_bytes / 4) as usize);
        let zeros = |category| Tensor::uninit(ctx, &[total], category);
        let (values, grads, first) =
            (zeros(Category::Weights), zeros(Category::Gradients), zeros(Category::OptimizerState));
        let second = second.then(|| zeros(Category::OptimizerState));
        let mut enc = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("arena") });
        for t in [Some(&values), Some(&grads), Some(&first), second.as_ref()].into_iter().flatten() {
            enc.clear_buffer(t.buffer(), 0, None);
        }
        // Views and copies first: an error leaves the model as it was.
        let mut moved = Vec::with_capacity(params.len());
        let mut res = Ok(());
        let mut it = params.iter().zip(&starts);
        model.visit(&mut |p| {
            let Some(grad) = &p.grad else { return };
            let (Some(((_, shape, _), &start)), Ok(())) = (it.next(), &res) else { return };
            res = (|| {
                let (v, g) = (values.view(start, shape, align_bytes)?, grads.view(start, shape, align_bytes)?);
                p.value.copy_to(&mut enc, &v)?;
                grad.copy_to(&mut enc, &g)?;
                moved.push((v, g));
                Ok(())
            })();
        });
        res?;
        ctx.submit(enc);
        let mut slots = Vec::with_capacity(params.len());
        let mut views = moved.into_iter().zip(params.into_iter().zip(starts));
        model.visit_mut(&mut |p| {
            if p.grad.is_none() {
                return;
            }
            let Some(((v, g), ((name, shape, _), first))) = views.next() else { return };
            slots.push(Slot { name, first, shape, ids: (v.id(), g.id()) });
            p.value = v;
            p.grad = Some(g);
        });
        Ok(ParamArena { values, grads, first, second, decayed, slots })
    }

    /// The view of `t` (one of the four buffers) holding `slot`.
    pub fn view(&self, t: &Tensor, slot: &Slot) -> Result<Tensor> {
        t.view(slot.first, &slot.shape, 4)
    }

    /// Checks that `model`'s trainable parameters are still this arena's views, in order.
    pub fn check(&self, model: &Model) -> Result<()> {
        let mut slots = self.slots.iter();
        let mut bad = None;
        model.visit(&mut |p| {
            let Some(grad) = &p.grad else { return };
            let ok = slots.next().is_some_and(|s| s.name == p.name && s.ids == (p.value.id(), grad.id()));
            if !ok && bad.is_none() {
                bad = Some(p.name.clone());
            }
        });
        match (bad, slots.next()) {
            (None, None) => Ok(()),
            (Some(name), _) => {
                Err(FdsrError::InvalidConfig(format!("{name} is not in the optimizer's arena (rebuild the optimizer)")))
            }
            (None, Some(s)) => Err(FdsrError::InvalidConfig(format!("the model has no parameter {}", s.name))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::layout;

    fn p(name: &str, n: usize, decay: bool) -> (String, Vec<usize>, bool) {
        (name.to_string(), vec![n], decay)
    }

    #[test]
    fn decayed_parameters_come_first_each_aligned() {
        let params = [p("a.weight", 100, true), p("a.bias", 3, false), p("b.weight", 64, true), p("b.bias", 65, false)];
        let (first, decayed, total) = layout(&params, 64);
        assert_eq!(first, vec![0, 192, 128, 256]);
        assert_eq!(decayed, 192);
        assert_eq!(total, 384);
    }

    #[test]
    fn an_empty_model_still_has_a_bindable_arena() {
        assert_eq!(layout(&[], 64), (vec![], 0, 64));
        assert_eq!(layout(&[p("b", 1, false)], 1), (vec![0], 0, 1));
    }
}
