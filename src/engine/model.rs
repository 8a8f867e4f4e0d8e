//! The models: `cnn`, `resnet20` and `tiny`, exactly as the README describes them, built with
//! seeded Kaiming initialization. Input: one channel, 32×32 (28×28 images zero-padded by 2).

use super::blocks::{BasicBlock, Flatten, GlobalAvgPool, MaxPool2, Sequential};
use super::gate::Gate;
use super::layers::{BatchNorm2d, Builder, Conv2d, Layer, Linear, Pass};
pub use super::model_name::{ModelName, CLASSES, INPUT_SIDE};
use super::param::Param;
use super::tensor::Tensor;
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;

/// A model: its layers and its name.
pub struct Model {
    /// Which architecture.
    pub name: ModelName,
    net: Sequential,
}

fn conv_bn_relu(b: &mut Builder<'_>, net: &mut Sequential, name: &str, cin: usize, cout: usize) -> Result<()> {
    net.push(Conv2d::new(b, &format!("{name}.conv"), cin, cout, 3, 1, 1, cin != 1)?);
    net.push(BatchNorm2d::with_relu(b, &format!("{name}.bn"), cout)?);
    Ok(())
}

impl Model {
    /// Builds `name` with parameters drawn from `seed`.
    pub fn new(ctx: &GpuContext, name: ModelName, seed: u64) -> Result<Model> {
        let mut b = Builder::new(ctx, seed);
        let mut net = Sequential::default();
        match name {
            ModelName::Cnn => {
                conv_bn_relu(&mut b, &mut net, "layer1", 1, 32)?;
                conv_bn_relu(&mut b, &mut net, "layer2", 32, 32)?;
                net.push(MaxPool2::new(&mut b));
                conv_bn_relu(&mut b, &mut net, "layer3", 32, 64)?;
                conv_bn_relu(&mut b, &mut net, "layer4", 64, 64)?;
                net.push(MaxPool2::new(&mut b));
                conv_bn_relu(&mut b, &mut net, "layer5", 64, 128)?;
                net.push(GlobalAvgPool::default());
                net.push(Linear::new(&mut b, "fc", 128, CLASSES)?);
            }
            ModelName::Resnet20 => {
                conv_bn_relu(&mut b, &mut net, "stem", 1, 16)?;
                let mut cin = 16;
                for (stage, cout) in [16, 32, 64].into_iter().enumerate() {
                    for block in 0..3 {
                        let stride = if stage > 0 && block == 0 { 2 } else { 1 };
                        let name = format!("stage{}.{block}", stage + 1);
                        net.push(BasicBlock::new(&mut b, &name, cin, cout, stride)?);
                        cin = cout;
                    }
                }
                net.push(GlobalAvgPool::default());
                net.push(Linear::new(&mut b, "fc", 64, CLASSES)?);
            }
            ModelName::Tiny => {
                conv_bn_relu(&mut b, &mut net, "layer1", 1, 8)?;
                net.push(MaxPool2::new(&mut b));
                conv_bn_relu(&mut b, &mut net, "layer2", 8, 16)?;
                net.push(MaxPool2::new(&mut b));
                net.push(Flatten::default());
                net.push(Linear::new(&mut b, "fc", 16 * 8 * 8, CLASSES)?);
            }
        }
        Ok(Model { name, net })
    }

    /// Checks that `x` is a batch of model inputs `[N, 1, 32, 32]`.
    pub fn check_input(&self, x: &Tensor) -> Result<()> {
        if x.shape().len() != 4 || x.shape()[1..] != [1, INPUT_SIDE, INPUT_SIDE] {
            return Err(FdsrError::InvalidTensor(format!(
                "{} takes [N, 1, {INPUT_SIDE}, {INPUT_SIDE}] images, got {:?}",
                self.name,
                x.shape()
            )));
        }
        Ok(())
    }

    /// Number of top-level layers (a residual block counts as one).
    pub fn layer_count(&self) -> usize {
        self.net.layers.len()
    }

    /// Records the forward pass of top-level layer `i`.
    pub fn forward_layer(&mut self, i: usize, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        self.layer(i)?.forward(p, x)
    }

    /// Records the backward pass of top-level layer `i` (`None`: nothing below needs a gradient).
    pub fn backward_layer(&mut self, i: usize, p: &mut Pass<'_>, dy: Tensor) -> Result<Option<Tensor>> {
        self.layer(i)?.backward(p, dy)
    }

    fn layer(&mut self, i: usize) -> Result<&mut Box<dyn Layer>> {
        let n = self.net.layers.len();
        self.net.layers.get_mut(i).ok_or_else(|| FdsrError::InvalidConfig(format!("layer {i} of {n}")))
    }

    /// Records the forward pass of images `x [N, 1, 32, 32]` to logits `[N, 10]` at once.
    pub fn forward(&mut self, p: &mut Pass<'_>, x: Tensor) -> Result<Tensor> {
        self.check_input(&x)?;
        self.net.forward(p, x)
    }

    /// Visits every parameter and buffer in a fixed order.
    pub fn visit(&self, f: &mut dyn FnMut(&Param)) {
        self.net.visit(f);
    }

    /// Visits every parameter and buffer mutably, in the same order.
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Param)) {
        self.net.visit_mut(f);
    }

    /// Visits the DFQ gate slot of every conv layer, with the layer's name.
    pub fn gates(&mut self, f: &mut dyn FnMut(&str, &mut Option<Gate>)) {
        self.net.gates(f);
    }

    /// Number of trainable values.
    pub fn parameter_count(&self) -> usize {
        let mut n = 0;
        self.visit(&mut |p| {
            if p.grad.is_some() {
                n += p.value.numel();
            }
        });
        n
    }
}
