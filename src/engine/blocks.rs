//! Parameter-free layers (ReLU, pooling, flatten), the residual basic block and `Sequential`.

use super::gate::Gate;
use super::layers::{BatchNorm2d, Builder, Conv2d, Layer, Pass};
use super::ops;
use super::param::Param;
use super::saved::Kind;
use super::tensor::{Sign, Tensor};
use crate::error::{FdsrError, Result};

/// ReLU; keeps a 1-bit mask for backward.
pub struct Relu {
    id: usize,
    len: usize,
}

impl Relu {
    /// A ReLU with its own saved-activation slot.
    pub fn new(b: &mut Builder<'_>) -> Self {
        Relu { id: b.id(), len: 0 }
    }

    /// Keeps the mask (in training) and marks `y` as a ReLU output.
    fn keep(&mut self, p: &mut Pass<'_>, y: Tensor, mask: ops::BitMask) -> Result<Tensor> {
        if p.train {
            self.len = mask.len;
            p.save(self.id, 0, &format!("relu{}.mask", self.id), &mask.words, Kind::Packed)?;
        }
        Ok(y.with_sign(Sign::Masked(Box::new(mask.words))))
    }

    /// The forward of `a + b` (a residual sum) in one pass with the add.
    fn forward_sum(&mut self, p: &mut Pass<'_>, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (y, mask) = ops::add_relu(p.ctx, p.enc, a, b)?;
        self.keep(p, y, mask)
    }
}

impl Layer for Relu {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        let (y, mask) = ops::relu_forward(p.ctx, p.enc, &x)?;
        self.keep(p, y, mask)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        let mask = ops::BitMask { words: p.load(self.id, 0)?, len: self.len };
        Ok(Some(ops::relu_backward(p.ctx, p.enc, dy, &mask)?))
    }
    fn visit(&self, _: &mut dyn FnMut(&Param)) {}
    fn visit_mut(&mut self, _: &mut dyn FnMut(&mut Param)) {}
}

/// 2×2 max pooling with stride 2; keeps a 2-bit argmax per output.
pub struct MaxPool2 {
    id: usize,
    input_shape: Vec<usize>,
    index_len: usize,
}

impl MaxPool2 {
    /// A max-pool with its own saved-activation slot.
    pub fn new(b: &mut Builder<'_>) -> Self {
        MaxPool2 { id: b.id(), input_shape: Vec::new(), index_len: 0 }
    }
}

impl Layer for MaxPool2 {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        let (y, index) = ops::maxpool2_forward(p.ctx, p.enc, &x)?;
        if p.train {
            self.input_shape = x.shape().to_vec();
            self.index_len = index.len;
            p.save(self.id, 0, &format!("maxpool{}.index", self.id), &index.words, Kind::Packed)?;
            p.saved.derivable_pooled(&x, &y, ((self.id, 0), index.len));
        }
        // The maximum of non-negative values is non-negative (its zero mask is another one).
        let sign = if matches!(x.sign(), Sign::Any) { Sign::Any } else { Sign::NonNegative };
        Ok(y.with_sign(sign))
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        let index = ops::PoolIndex { words: p.load(self.id, 0)?, len: self.index_len };
        Ok(Some(ops::maxpool2_backward(p.ctx, p.enc, &dy, &index, &self.input_shape)?))
    }
    fn visit(&self, _: &mut dyn FnMut(&Param)) {}
    fn visit_mut(&mut self, _: &mut dyn FnMut(&mut Param)) {}
}

/// Global average pooling `[N, C, H, W] → [N, C]` (saves only the shape).
#[derive(Default)]
pub struct GlobalAvgPool {
    input_shape: Vec<usize>,
}

impl Layer for GlobalAvgPool {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        self.input_shape = x.shape().to_vec();
        ops::avgpool_forward(p.ctx, p.enc, &x)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        Ok(Some(ops::avgpool_backward(p.ctx, p.enc, &dy, &self.input_shape)?))
    }
    fn visit(&self, _: &mut dyn FnMut(&Param)) {}
    fn visit_mut(&mut self, _: &mut dyn FnMut(&mut Param)) {}
}

/// Layers applied in order.
#[derive(Default)]
pub struct Sequential {
    /// The layers, first applied first.
    pub layers: Vec<Box<dyn Layer>>,
}

impl Sequential {
    /// Appends a layer.
    pub fn push(&mut self, layer: impl Layer + 'static) {
        self.layers.push(Box::new(layer));
    }
}

impl Layer for Sequential {
    fn forward(&mut self, p: &mut Pass<'_>, mut x: Tensor) -> Result<Tensor> {
        for l in &mut self.layers {
            x = l.forward(p, x)?;
        }
        Ok(x)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        let mut d = Some(dy);
        for l in self.layers.iter_mut().rev() {
            let Some(g) = d else { break };
            d = l.backward(p, g)?;
        }
        Ok(d)
    }
    fn visit(&self, f: &mut dyn FnMut(&Param)) {
        self.layers.iter().for_each(|l| l.visit(f));
    }
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        self.layers.iter_mut().for_each(|l| l.visit_mut(f));
    }
    fn gates(&mut self, f: &mut dyn FnMut(&str, &mut Option<Gate>)) {
        self.layers.iter_mut().for_each(|l| l.gates(f));
    }
}

/// ResNet basic block: `relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))`, the shortcut a
/// 1×1 projection with batch norm where the stride or the width changes.
pub struct BasicBlock {
    main: Sequential,
    shortcut: Option<Sequential>,
    out: Relu,
}

impl BasicBlock {
    /// A block `cin → cout` whose first conv has `stride`.
    pub fn new(b: &mut Builder<'_>, name: &str, cin: usize, cout: usize, stride: usize) -> Result<Self> {
        let mut main = Sequential::default();
        main.push(Conv2d::new(b, &format!("{name}.conv1"), cin, cout, 3, stride, 1, true)?);
        main.push(BatchNorm2d::with_relu(b, &format!("{name}.bn1"), cout)?);
        main.push(Conv2d::new(b, &format!("{name}.conv2"), cout, cout, 3, 1, 1, true)?);
        main.push(BatchNorm2d::new(b, &format!("{name}.bn2"), cout)?);
        let shortcut = if stride != 1 || cin != cout {
            let mut s = Sequential::default();
            s.push(Conv2d::new(b, &format!("{name}.shortcut.0"), cin, cout, 1, stride, 0, true)?);
            s.push(BatchNorm2d::new(b, &format!("{name}.shortcut.1"), cout)?);
            Some(s)
        } else {
            None
        };
        Ok(BasicBlock { main, shortcut, out: Relu::new(b) })
    }
}

impl Layer for BasicBlock {
    fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        let skip = match &mut self.shortcut {
            Some(s) => s.forward(p, x.clone())?,
            None => x.clone(),
        };
        let h = self.main.forward(p, x)?;
        self.out.forward_sum(p, &h, &skip)
    }
    fn backward(&mut self, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        let d = self.out.backward(p, dy)?.ok_or_else(|| FdsrError::InvalidConfig("relu gave no gradient".into()))?;
        let dskip = match &mut self.shortcut {
            Some(s) => s.backward(p, d.clone())?,
            None => Some(d.clone()),
        };
        let dmain = self.main.backward(p, d)?;
        match (dmain, dskip) {
            (Some(a), Some(b)) => Ok(Some(ops::add(p.ctx, p.enc, &a, &b)?)),
            _ => Err(FdsrError::InvalidConfig("a residual block needs the gradient of its input".into())),
        }
    }
    fn visit(&self, f: &mut dyn FnMut(&Param)) {
        self.main.visit(f);
        if let Some(s) = &self.shortcut {
            s.visit(f);
        }
    }
    fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        self.main.visit_mut(f);
        if let Some(s) = &mut self.shortcut {
            s.visit_mut(f);
        }
    }
    fn gates(&mut self, f: &mut dyn FnMut(&str, &mut Option<Gate>)) {
        self.main.gates(f);
        if let Some(s) = &mut self.shortcut {
            s.gates(f);
        }
    }
}

/// `[N, C, …] → [N, C·…]` (a view; no kernel).
#[derive(Default)]
pub struct Flatten {
    input_shape: Vec<usize>,
}

impl Layer for Flatten {
    fn forward(&mut self, _: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        self.input_shape = x.shape().to_vec();
        let n = x.shape().first().copied().unwrap_or(1);
        x.reshape(&[n, x.numel() / n.max(1)])
    }
    fn backward(&mut self, _: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        Ok(Some(dy.reshape(&self.input_shape)?))
    }
    fn visit(&self, _: &mut dyn FnMut(&Param)) {}
    fn visit_mut(&mut self, _: &mut dyn FnMut(&mut Param)) {}
}
