//! Reference ReLU (with its bit mask), max-pool 2×2 (with 2-bit indices), global average pool and
//! softmax cross-entropy: the oracle of `shaders/ops_elementwise.wgsl`, `ops_pool.wgsl` and
//! `ops_loss.wgsl`. Integer outputs (mask and index words) are what the GPU must match exactly.

/// `y = max(x, 0)` and the mask words (bit `i` of word `j` set when `x[32j + i] > 0`).
pub fn relu_forward(x: &[f32]) -> (Vec<f32>, Vec<u32>) {
    let y = x.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect();
    let mut words = vec![0u32; x.len().div_ceil(32)];
    for (i, &v) in x.iter().enumerate() {
        if v > 0.0 {
            words[i / 32] |= 1 << (i % 32);
        }
    }
    (y, words)
}

/// `dx = dy` where the mask bit is set, else 0.
pub fn relu_backward(dy: &[f32], words: &[u32]) -> Vec<f32> {
    dy.iter().enumerate().map(|(i, &d)| if words[i / 32] >> (i % 32) & 1 == 1 { d } else { 0.0 }).collect()
}

/// `max(x, 0)` where the mask bit is set, else 0: the mask-aware decode of a ReLU output.
pub fn mask_clamp(x: &[f32], words: &[u32]) -> Vec<f32> {
    relu_backward(x, words).into_iter().map(|v| v.max(0.0)).collect()
}

/// Max-pool 2×2 stride 2 of `x` of shape `[n, c, h, w]` (even h, w): outputs and index words
/// (output `o` in bits `2(o mod 16)` of word `o / 16`; first maximum in raster order wins).
pub fn maxpool2_forward(x: &[f32], [n, c, h, w]: [usize; 4]) -> (Vec<f32>, Vec<u32>) {
    let (oh, ow) = (h / 2, w / 2);
    let outputs = n * c * oh * ow;
    let mut y = vec![0f32; outputs];
    let mut words = vec![0u32; outputs.div_ceil(16)];
    for (o, yo) in y.iter_mut().enumerate() {
        let (plane, oy, ox) = (o / (oh * ow), o % (oh * ow) / ow, o % ow);
        let i0 = plane * h * w + 2 * oy * w + 2 * ox;
        let cand = [x[i0], x[i0 + 1], x[i0 + w], x[i0 + w + 1]];
        let mut k = 0;
        for (j, &v) in cand.iter().enumerate().skip(1) {
            if v > cand[k] {
                k = j;
            }
        }
        *yo = cand[k];
        words[o / 16] |= (k as u32) << (2 * (o % 16));
    }
    (y, words)
}

/// Index of the input that output `o` of a max-pool over `h × w` planes took, by its argmax `words`.
fn argmax_input(o: usize, words: &[u32], h: usize, w: usize) -> usize {
    let (oh, ow) = (h / 2, w / 2);
    let (plane, oy, ox) = (o / (oh * ow), o % (oh * ow) / ow, o % ow);
    let k = ((words[o / 16] >> (2 * (o % 16))) & 3) as usize;
    plane * h * w + (2 * oy + k / 2) * w + 2 * ox + k % 2
}

/// The values of `x` at the argmax `words` of a [`maxpool2_forward`] (of `x` or of another input
/// of the same shape).
pub fn maxpool2_gather(x: &[f32], words: &[u32], [n, c, h, w]: [usize; 4]) -> Vec<f32> {
    (0..n * c * (h / 2) * (w / 2)).map(|o| x[argmax_input(o, words, h, w)]).collect()
}

/// Input gradient of [`maxpool2_forward`] for output gradient `dy`.
pub fn maxpool2_backward(dy: &[f32], words: &[u32], [n, c, h, w]: [usize; 4]) -> Vec<f32> {
    let mut dx = vec![0f32; n * c * h * w];
    for (o, &d) in dy.iter().enumerate() {
        dx[argmax_input(o, words, h, w)] = d;
    }
    dx
}

/// Global average pool `[n, c, h, w] → [n, c]` (f32 sum in raster order, then `/ (h·w)`, as the
/// GPU does).
pub fn avgpool_forward(x: &[f32], [n, c, h, w]: [usize; 4]) -> Vec<f32> {
    let hw = h * w;
    (0..n * c).map(|p| x[p * hw..(p + 1) * hw].iter().fold(0f32, |s, &v| s + v) / hw as f32).collect()
}

/// Input gradient of [`avgpool_forward`].
pub fn avgpool_backward(dy: &[f32], [n, c, h, w]: [usize; 4]) -> Vec<f32> {
    let hw = h * w;
    (0..n * c * hw).map(|i| dy[i / hw] / hw as f32).collect()
}

/// Softmax cross-entropy of `logits [b, c]`: (mean loss, number of rows whose first argmax is
/// the label, probabilities). Computed in f64.
pub fn cross_entropy_forward(logits: &[f32], labels: &[u8], c: usize) -> (f64, usize, Vec<f32>) {
    let b = labels.len();
    let mut probs = vec![0f32; b * c];
    let (mut loss, mut correct) = (0f64, 0usize);
    for (i, &label) in labels.iter().enumerate() {
        let row = &logits[i * c..(i + 1) * c];
        let mut arg = 0;
        for (k, &v) in row.iter().enumerate() {
            if v > row[arg] {
                arg = k;
            }
        }
        let mx = f64::from(row[arg]);
        let s: f64 = row.iter().map(|&v| (f64::from(v) - mx).exp()).sum();
        for (k, &v) in row.iter().enumerate() {
            probs[i * c + k] = ((f64::from(v) - mx).exp() / s) as f32;
        }
        loss += mx + s.ln() - f64::from(row[label as usize]);
        correct += usize::from(arg == label as usize);
    }
    (loss / b as f64, correct, probs)
}

/// Gradient of the mean cross-entropy with respect to the logits: `(probs − onehot) / b`.
pub fn cross_entropy_backward(probs: &[f32], labels: &[u8], c: usize) -> Vec<f32> {
    let b = labels.len() as f32;
    probs.iter().enumerate().map(|(i, &p)| (p - f32::from(u8::from(i % c == labels[i / c] as usize))) / b).collect()
}
