//! The conv and linear layers of each model as the precision policies see them: MACs per image,
//! weight count and depth, in forward order (matching `Model::new`).

use crate::engine::model_name::{ModelName, CLASSES, INPUT_SIDE};

/// One conv or linear layer.
#[derive(Clone, Debug, PartialEq)]
pub struct ComputeLayer {
    /// Parameter name prefix, e.g. `stage2.0.conv1`.
    pub name: String,
    /// Multiply-accumulates per image in the forward pass.
    pub macs: u64,
    /// Weight values.
    pub params: u64,
    /// Input channels (convs) or features (the classifier).
    pub inputs: usize,
    /// Position along the main path (0 = first conv); a shortcut shares its block's first conv.
    pub depth: usize,
    /// No input gradient is computed (the first conv).
    pub first: bool,
}

fn conv(name: String, cin: usize, cout: usize, k: usize, out_side: usize, depth: usize) -> ComputeLayer {
    let params = (cout * cin * k * k) as u64;
    ComputeLayer { name, macs: params * (out_side * out_side) as u64, params, inputs: cin, depth, first: depth == 0 }
}

/// The compute layers of `model`, in forward order; the last one is the classifier.
pub fn layers(model: ModelName) -> Vec<ComputeLayer> {
    let s = INPUT_SIDE;
    let mut v = Vec::new();
    let fc = |v: &mut Vec<ComputeLayer>, inputs: usize, depth: usize| {
        let params = (inputs * CLASSES) as u64;
        v.push(ComputeLayer { name: "fc".into(), macs: params, params, inputs, depth, first: false });
    };
    match model {
        ModelName::Tiny => {
            v.push(conv("layer1.conv".into(), 1, 8, 3, s, 0));
            v.push(conv("layer2.conv".into(), 8, 16, 3, s / 2, 1));
            fc(&mut v, 16 * 8 * 8, 2);
        }
        ModelName::Cnn => {
            let plan = [(1, 32, s), (32, 32, s), (32, 64, s / 2), (64, 64, s / 2), (64, 128, s / 4)];
            for (i, (cin, cout, side)) in plan.into_iter().enumerate() {
                v.push(conv(format!("layer{}.conv", i + 1), cin, cout, 3, side, i));
            }
            fc(&mut v, 128, 5);
        }
        ModelName::Resnet20 => {
            v.push(conv("stem.conv".into(), 1, 16, 3, s, 0));
            let (mut cin, mut side, mut depth) = (16, s, 1);
            for (stage, cout) in [16, 32, 64].into_iter().enumerate() {
                for block in 0..3 {
                    let stride = if stage > 0 && block == 0 { 2 } else { 1 };
                    let out = side / stride;
                    let name = format!("stage{}.{block}", stage + 1);
                    v.push(conv(format!("{name}.conv1"), cin, cout, 3, out, depth));
                    v.push(conv(format!("{name}.conv2"), cout, cout, 3, out, depth + 1));
                    if stride != 1 || cin != cout {
                        v.push(conv(format!("{name}.shortcut.0"), cin, cout, 1, out, depth));
                    }
                    cin = cout;
                    side = out;
                    depth += 2;
                }
            }
            fc(&mut v, 64, depth);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resnet20_has_nineteen_convs_two_shortcuts_and_fc() {
        let l = layers(ModelName::Resnet20);
        assert_eq!(l.len(), 22);
        assert_eq!(l.iter().filter(|c| c.name.contains("shortcut")).count(), 2);
        assert_eq!(l.last().unwrap().depth, 19);
        let params: u64 = l.iter().map(|c| c.params).sum();
        assert_eq!(params, 144 + 6 * 2304 + (4608 + 5 * 9216 + 512) + (18432 + 5 * 36864 + 2048) + 640);
        assert_eq!(l.iter().filter(|c| c.first).count(), 1);
    }

    #[test]
    fn tiny_macs() {
        let l = layers(ModelName::Tiny);
        assert_eq!(l[0].macs, 72 * 1024);
        assert_eq!(l[1].macs, 1152 * 256);
        assert_eq!(l[2].macs, 10240);
    }
}
