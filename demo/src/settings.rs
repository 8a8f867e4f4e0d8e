//! What the user can set — for a run (model, policy, budget, learning rate, batch) and for the
//! view (the story's layer and tile, the open tab) — and its `key=value&…` text form, used for
//! the URL hash on the web.

use fdsr::engine::optim::{OptConfig, OptKind, Schedule};
use fdsr::engine::{ModelName, TrainConfig};
use fdsr::Policy;

/// How saved activations are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// fp32.
    None,
    /// ActNN-like `uniform:B` (B = the budget, rounded, 1..=8).
    Uniform,
    /// DIVISION.
    Division,
    /// FDSR at the budget.
    Fdsr,
}

impl PolicyKind {
    /// Every kind, in picker order.
    pub const ALL: [PolicyKind; 4] = [PolicyKind::None, PolicyKind::Uniform, PolicyKind::Division, PolicyKind::Fdsr];

    /// Name in the picker and the hash.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::None => "none",
            PolicyKind::Uniform => "uniform",
            PolicyKind::Division => "division",
            PolicyKind::Fdsr => "fdsr",
        }
    }
}

/// The tabs of the secondary panels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// The ratio–accuracy frontier.
    Frontier,
    /// Band energy per tensor.
    Energy,
    /// Tile classes and reuse.
    Tiles,
    /// The device pool by category.
    Pool,
    /// The DCT basis explorer.
    Basis,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 5] = [Tab::Frontier, Tab::Energy, Tab::Tiles, Tab::Pool, Tab::Basis];

    /// Name on the tab and in the hash.
    pub fn as_str(self) -> &'static str {
        match self {
            Tab::Frontier => "frontier",
            Tab::Energy => "energy",
            Tab::Tiles => "tiles",
            Tab::Pool => "pool",
            Tab::Basis => "basis",
        }
    }
}

/// Model and batch together: one quick to start (the default), one whose saved activations
/// take tens of MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// `tiny`, batch 32: the first step is quick in the browser.
    Quick,
    /// `cnn`, batch 64: memory bars of tens of MiB (slower steps).
    Memory,
}

impl Preset {
    /// Every preset, in picker order.
    pub const ALL: [Preset; 2] = [Preset::Quick, Preset::Memory];

    /// Name in the picker and the hash (`preset=memory`).
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Quick => "quick",
            Preset::Memory => "memory",
        }
    }

    /// Model and batch of the preset.
    pub fn model_batch(self) -> (ModelName, usize) {
        match self {
            Preset::Quick => (ModelName::Tiny, 32),
            Preset::Memory => (ModelName::Cnn, 64),
        }
    }

    /// The preset whose model and batch `s` has, if any.
    pub fn of(s: &Settings) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.model_batch() == (s.model, s.batch))
    }
}

/// Settings of one run and of the view.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `tiny` or `cnn`.
    pub model: ModelName,
    /// Policy kind.
    pub policy: PolicyKind,
    /// Bits per value (fdsr budget; uniform bits rounded).
    pub budget: f32,
    /// Learning rate (SGD, constant).
    pub lr: f32,
    /// Images per step.
    pub batch: usize,
    /// Similarity reuse (LSH) in fdsr.
    pub reuse: bool,
    /// The codec story's layer.
    pub layer: usize,
    /// The codec story's image, channel, tile row and tile column.
    pub tile: [usize; 4],
    /// The open tab.
    pub tab: Tab,
    /// The memory cap (MiB) under which the largest batch of each policy is estimated.
    pub cap_mib: f32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model: ModelName::Tiny,
            policy: PolicyKind::Fdsr,
            budget: 4.0,
            lr: 0.02,
            batch: 32,
            reuse: false,
            // Layer 0 is the first conv: its output is the very tensor that `layer1.bn` saves and
            // the codec stores (elsewhere the story follows a stored tensor of the same shape;
            // a batch norm's ReLU output, pooled or not, is recomputed, not stored).
            layer: 0,
            tile: [0, 0, 1, 1],
            tab: Tab::Frontier,
            cap_mib: 64.0,
        }
    }
}

/// Budget range of the slider (bits per value).
pub const BUDGET_RANGE: std::ops::RangeInclusive<f32> = 1.0..=8.0;
/// Batch sizes offered.
pub const BATCHES: [usize; 5] = [8, 16, 32, 64, 128];
/// Range of the memory cap (MiB).
pub const CAP_RANGE: std::ops::RangeInclusive<f32> = 1.0..=16384.0;

impl Settings {
    /// Whether `other` makes the same run (the view aside).
    pub fn same_run(&self, other: &Settings) -> bool {
        let view = |s: &Settings| Settings { layer: 0, tile: [0; 4], tab: Tab::Frontier, cap_mib: 0.0, ..s.clone() };
        view(self) == view(other)
    }

    /// The codec policy, `None` for fp32.
    pub fn policy(&self) -> Result<Option<Policy>, String> {
        let text = match self.policy {
            PolicyKind::None => return Ok(None),
            PolicyKind::Uniform => format!("uniform:{}", self.budget.round().clamp(1.0, 8.0) as u8),
            PolicyKind::Division => "division".to_string(),
            PolicyKind::Fdsr => {
                format!("fdsr:budget={},mask,grad{}", self.budget, if self.reuse { ",reuse" } else { "" })
            }
        };
        text.parse().map(Some).map_err(|e: fdsr::FdsrError| e.to_string())
    }

    /// The policy as text, as the store's records name it.
    pub fn policy_label(&self) -> String {
        match self.policy {
            PolicyKind::None => "none (fp32)".into(),
            PolicyKind::Uniform => format!("uniform:{}", self.budget.round().clamp(1.0, 8.0) as u8),
            PolicyKind::Division => "division".into(),
            PolicyKind::Fdsr => {
                format!("fdsr:budget={:.2},mask,grad{}", self.budget, if self.reuse { ",reuse" } else { "" })
            }
        }
    }

    /// The trainer configuration (SGD with momentum, constant rate, a run long enough to watch).
    pub fn train_config(&self) -> Result<TrainConfig, String> {
        Ok(TrainConfig {
            model: self.model,
            epochs: 1000,
            batch: self.batch,
            lr: self.lr,
            schedule: Schedule::Constant,
            opt: OptConfig::defaults(OptKind::Sgd),
            seed: 0,
            augment: false,
            policy: self.policy()?,
            // The browser has no cooperative matrices: exact fp32.
            compute: fdsr::gpu::Compute::Fp32,
        })
    }

    /// `model=tiny&policy=fdsr&budget=4&lr=0.05&batch=32&reuse=0&layer=0&tile=0,0,0,0&tab=frontier&cap=64`.
    pub fn to_query(&self) -> String {
        let model = match self.model {
            ModelName::Cnn => "cnn",
            _ => "tiny",
        };
        format!(
            "model={model}&policy={}&budget={}&lr={}&batch={}&reuse={}&layer={}&tile={}&tab={}&cap={}",
            self.policy.as_str(),
            self.budget,
            self.lr,
            self.batch,
            u8::from(self.reuse),
            self.layer,
            self.tile.map(|v| v.to_string()).join(","),
            self.tab.as_str(),
            self.cap_mib
        )
    }

    /// Parses [`Self::to_query`]'s form (a leading `#` is ignored); `preset=quick|memory` sets
    /// the model and the batch (a later `model=` or `batch=` overrides it). Unknown keys and bad
    /// values keep their defaults; each problem is named in the returned messages.
    pub fn from_query(text: &str) -> (Settings, Vec<String>) {
        let mut s = Settings::default();
        let mut problems = Vec::new();
        for pair in text.trim_start_matches('#').split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let ok = match key {
                "model" => match value {
                    "tiny" => Some(ModelName::Tiny),
                    "cnn" => Some(ModelName::Cnn),
                    _ => None,
                }
                .map(|m| s.model = m),
                "policy" => PolicyKind::ALL.iter().find(|k| k.as_str() == value).map(|k| s.policy = *k),
                "budget" => value.parse::<f32>().ok().filter(|b| BUDGET_RANGE.contains(b)).map(|b| s.budget = b),
                "lr" => value.parse::<f32>().ok().filter(|v| v.is_finite() && *v > 0.0 && *v <= 1.0).map(|v| s.lr = v),
                "batch" => value.parse::<usize>().ok().filter(|b| BATCHES.contains(b)).map(|b| s.batch = b),
                "reuse" => match value {
                    "0" => Some(false),
                    "1" => Some(true),
                    _ => None,
                }
                .map(|r| s.reuse = r),
                "layer" => value.parse::<usize>().ok().filter(|l| *l < 64).map(|l| s.layer = l),
                "tile" => {
                    let v: Vec<usize> = value.split(',').filter_map(|x| x.parse().ok()).collect();
                    <[usize; 4]>::try_from(v).ok().map(|t| s.tile = t)
                }
                "tab" => Tab::ALL.iter().find(|t| t.as_str() == value).map(|t| s.tab = *t),
                "cap" => value.parse::<f32>().ok().filter(|c| CAP_RANGE.contains(c)).map(|c| s.cap_mib = c),
                "preset" => Preset::ALL.iter().find(|p| p.as_str() == value).map(|p| {
                    (s.model, s.batch) = p.model_batch();
                }),
                _ => None,
            };
            if ok.is_none() {
                problems.push(format!("ignored '{pair}' in the settings (kept the default)"));
            }
        }
        (s, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_round_trips() {
        let s = Settings {
            model: ModelName::Cnn,
            policy: PolicyKind::Uniform,
            budget: 2.0,
            lr: 0.1,
            batch: 64,
            reuse: false,
            layer: 2,
            tile: [1, 3, 0, 1],
            tab: Tab::Basis,
            cap_mib: 256.0,
        };
        let (back, problems) = Settings::from_query(&format!("#{}", s.to_query()));
        assert_eq!(back, s);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn bad_query_falls_back_with_messages() {
        let (s, problems) =
            Settings::from_query("model=vgg&budget=99&lr=abc&batch=7&reuse=2&x&tile=1,2&tab=no&cap=0&preset=huge");
        assert_eq!(s, Settings::default());
        assert_eq!(problems.len(), 10, "{problems:?}");
    }

    #[test]
    fn presets_set_model_and_batch_and_the_hash_keeps_them() {
        assert_eq!(Preset::of(&Settings::default()), Some(Preset::Quick), "the default is the quick preset");
        let (s, problems) = Settings::from_query("preset=memory&policy=uniform");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((s.model, s.batch, s.policy), (ModelName::Cnn, 64, PolicyKind::Uniform));
        assert_eq!(Preset::of(&s), Some(Preset::Memory));
        assert_eq!(Settings::from_query(&s.to_query()).0, s);
        // A later key overrides the preset's.
        let (s, _) = Settings::from_query("preset=memory&batch=16");
        assert_eq!((s.model, s.batch, Preset::of(&s)), (ModelName::Cnn, 16, None));
    }

    #[test]
    fn the_view_is_not_the_run() {
        let s = Settings::default();
        assert!(s.same_run(&Settings { layer: 3, tab: Tab::Pool, cap_mib: 8.0, ..s.clone() }));
        assert!(!s.same_run(&Settings { budget: 2.0, ..s.clone() }));
    }

    #[test]
    fn policies_parse() {
        for kind in PolicyKind::ALL {
            let s = Settings { policy: kind, ..Settings::default() };
            assert_eq!(s.policy().unwrap().is_some(), kind != PolicyKind::None);
        }
    }
}
