//! Cooperative matrices (tensor cores): the `--compute` choice, whether an adapter can run
//! `shaders/gemm_coop.wgsl`, and the one place that opts into wgpu's experimental features.
//!
//! The kernel multiplies D×D×D tiles with f16 A and B and an f32 accumulator, D = 16 (NVIDIA,
//! AMD) or 8 (the lavapipe of Mesa 26.2; that of 22.3 or 25.0 offers none). It needs the adapter
//! to offer such a configuration, `SHADER_F16` and `SUBGROUP` (its `subgroup_id` /
//! `num_subgroups` builtins), subgroup sizes that are powers of two of at most 128 (so the
//! 128 invocations of a workgroup form full subgroups whatever size the driver picks in
//! `subgroup_min_size..=subgroup_max_size`), and room for its workgroup memory. Everything else
//! (older lavapipe, the browser) runs the exact fp32 GEMM.

use std::fmt;
use std::str::FromStr;

use crate::error::{FdsrError, Result};

/// Invocations of one cooperative-matrix GEMM workgroup (`WG` in `gemm_coop.wgsl`).
pub const COOP_WORKGROUP: u32 = 128;
/// The fragment sizes the kernel is built for, the preferred first.
pub const COOP_FRAGMENTS: [u32; 2] = [16, 8];

/// Regions of C (D×4D each, one per subgroup and round) per workgroup tile of 4096 values with
/// `fragment`×`fragment` fragments: 4 with 16, 16 with 8.
pub fn coop_regions(fragment: u32) -> u32 {
    1024 / (fragment * fragment)
}

/// Workgroup memory of the kernel at its largest: A and B staged as f16 (at most 64×16 + 16×256
/// values) and C as f32 (4096 values and a scratch region of 1024 with 16×16 fragments, 256 with
/// 8×8).
pub const COOP_WORKGROUP_BYTES: u32 = 2 * (16 * 64 + 16 * 256) + 4 * 5120;

/// How conv and linear layers multiply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Compute {
    /// Exact fp32 everywhere.
    Fp32,
    /// Cooperative matrices where the adapter offers a configuration the kernel implements, a
    /// self-check at start passes and a timed layer runs faster than on fp32; fp32 otherwise.
    #[default]
    Auto,
    /// Cooperative matrices wherever offered and self-checked, even where slower than fp32 (an
    /// error where they cannot run).
    Coop,
}

impl FromStr for Compute {
    type Err = FdsrError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "fp32" => Ok(Compute::Fp32),
            "auto" => Ok(Compute::Auto),
            "coop" => Ok(Compute::Coop),
            _ => Err(FdsrError::InvalidConfig(format!("--compute {s:?}: expected fp32, auto or coop"))),
        }
    }
}

impl fmt::Display for Compute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compute::Fp32 => "fp32",
            Compute::Auto => "auto",
            Compute::Coop => "coop",
        })
    }
}

/// The path the GEMMs of a context take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComputePath {
    /// `shaders/gemm.wgsl`.
    #[default]
    Fp32,
    /// `shaders/gemm_coop.wgsl`, every subgroup running `rounds` rounds of regions.
    Coop {
        /// The fragments' size, one of [`COOP_FRAGMENTS`].
        fragment: u32,
        /// The kernel's `ROUNDS` override (see [`coop_rounds`]).
        rounds: u32,
    },
}

impl fmt::Display for ComputePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComputePath::Fp32 => f.write_str("fp32"),
            ComputePath::Coop { fragment: d, .. } => write!(f, "cooperative matrix {d}x{d}x{d} f16→f32"),
        }
    }
}

/// Rounds of regions a subgroup runs so that the fewest subgroups a workgroup can have (with
/// subgroups of `subgroup_max` invocations) cover the tile's [`coop_regions`].
pub fn coop_rounds(subgroup_max: u32, fragment: u32) -> u32 {
    let fewest = (COOP_WORKGROUP / subgroup_max.max(1)).max(1);
    coop_regions(fragment).div_ceil(fewest)
}

/// What the adapter has that the kernel depends on.
#[derive(Clone, Debug)]
pub struct CoopOffer<'a> {
    /// The features the device was created with.
    pub features: wgpu::Features,
    /// The adapter's cooperative-matrix configurations.
    pub configs: &'a [wgpu::CooperativeMatrixProperties],
    /// Smallest and largest subgroup size.
    pub subgroup_sizes: (u32, u32),
    /// The device's workgroup-memory limit in bytes.
    pub workgroup_bytes: u32,
    /// The device's limit on invocations per workgroup.
    pub invocations: u32,
}

/// The path `gemm_coop.wgsl` takes on a device with `offer`, or why it cannot run there.
pub fn coop_path(offer: &CoopOffer<'_>) -> std::result::Result<ComputePath, String> {
    let offered = |d: u32| {
        offer.configs.iter().any(|c| {
            (c.m_size, c.n_size, c.k_size) == (d, d, d)
                && c.ab_type == wgpu::CooperativeScalarType::F16
                && c.cr_type == wgpu::CooperativeScalarType::F32
        })
    };
    let Some(fragment) = COOP_FRAGMENTS.into_iter().find(|&d| offered(d)) else {
        let have: Vec<String> = offer
            .configs
            .iter()
            .map(|c| format!("{}x{}x{} {:?}→{:?}", c.m_size, c.n_size, c.k_size, c.ab_type, c.cr_type))
            .collect();
        return Err(format!("no 16x16x16 or 8x8x8 f16→f32 cooperative matrices (adapter offers {have:?})"));
    };
    let needed =
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP;
    let missing = needed - offer.features;
    if !missing.is_empty() {
        return Err(format!("the device lacks {missing:?}"));
    }
    let (lo, hi) = offer.subgroup_sizes;
    if lo == 0 || !lo.is_power_of_two() || !hi.is_power_of_two() || lo > hi || hi > COOP_WORKGROUP {
        return Err(format!("subgroup sizes {lo}..={hi} are not powers of two of at most {COOP_WORKGROUP}"));
    }
    if offer.workgroup_bytes < COOP_WORKGROUP_BYTES || offer.invocations < COOP_WORKGROUP {
        return Err(format!(
            "workgroups of {} bytes and {} invocations (the kernel needs {COOP_WORKGROUP_BYTES} and {COOP_WORKGROUP})",
            offer.workgroup_bytes, offer.invocations
        ));
    }
    Ok(ComputePath::Coop { fragment, rounds: coop_rounds(hi, fragment) })
}

/// The experimental features to request from an adapter offering `adapter_features`: the
/// cooperative-matrix kernel's (cooperative matrices, f16, subgroups), all or none; natively
/// only, and only when `wanted`.
pub fn coop_features(adapter_features: wgpu::Features, wanted: bool) -> wgpu::Features {
    let all = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP;
    if cfg!(target_arch = "wasm32") || !wanted || !adapter_features.contains(all) {
        wgpu::Features::empty()
    } else {
        all
    }
}

/// The token that lets a device be created with `features` when they include an experimental
/// one (else the default token, which refuses experimental features).
pub fn experimental_token(features: wgpu::Features) -> wgpu::ExperimentalFeatures {
    if features.intersects(wgpu::Features::all_experimental_mask()) {
        // SAFETY: wgpu marks its experimental features `unsafe` because their implementations
        // may still hold bugs with undefined behavior. The only experimental feature fdsr ever
        // requests is EXPERIMENTAL_COOPERATIVE_MATRIX (see `coop_features`), and only where the
        // adapter offers it; the one shader using it (`gemm_coop.wgsl`) runs only after a
        // self-check against the fp32 kernel passes (`engine::gemm::select_compute`), and never
        // under `--compute fp32`, which does not request the feature at all.
        unsafe { wgpu::ExperimentalFeatures::enabled() }
    } else {
        wgpu::ExperimentalFeatures::disabled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::{CooperativeMatrixProperties as P, CooperativeScalarType as T};

    const H200: [P; 2] = [
        P { m_size: 16, n_size: 16, k_size: 16, ab_type: T::F16, cr_type: T::F32, saturating_accumulation: false },
        P { m_size: 16, n_size: 16, k_size: 16, ab_type: T::F16, cr_type: T::F16, saturating_accumulation: false },
    ];

    fn offer(configs: &[P], sizes: (u32, u32)) -> CoopOffer<'_> {
        CoopOffer {
            features: wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
                | wgpu::Features::SHADER_F16
                | wgpu::Features::SUBGROUP,
            configs,
            subgroup_sizes: sizes,
            workgroup_bytes: 48 << 10,
            invocations: 1024,
        }
    }

    #[test]
    fn the_option_parses_and_rejects_bad_input() {
        for c in [Compute::Fp32, Compute::Auto, Compute::Coop] {
            assert_eq!(c.to_string().parse::<Compute>().unwrap(), c);
        }
        for bad in ["", "FP32", "f16", "tensor", "auto "] {
            let e = bad.parse::<Compute>().unwrap_err().to_string();
            assert!(e.contains("expected fp32, auto or coop"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn rounds_cover_the_regions_with_the_fewest_subgroups() {
        assert_eq!(coop_rounds(32, 16), 1, "NVIDIA: 4 subgroups of 32");
        assert_eq!(coop_rounds(64, 16), 2, "AMD wave64: 2 subgroups");
        assert_eq!(coop_rounds(128, 16), 4, "one subgroup");
        assert_eq!(coop_rounds(16, 16), 1);
        assert_eq!(coop_rounds(4, 16), 1);
        assert_eq!(coop_rounds(8, 8), 1, "lavapipe: 16 subgroups of 8 for 16 regions of 8x32");
        assert_eq!(coop_rounds(32, 8), 4);
        for d in COOP_FRAGMENTS {
            // The regions (D x 4D) tile the workgroup's 4096 values of C.
            assert_eq!(coop_regions(d) * 4 * d * d, 4096, "{d}");
            for max in [4, 8, 16, 32, 64, 128] {
                assert!(coop_rounds(max, d) * (COOP_WORKGROUP / max) >= coop_regions(d), "{max}");
            }
        }
    }

    #[test]
    fn the_largest_implemented_configuration_on_a_capable_device_is_taken() {
        let coop = |fragment, rounds| Ok(ComputePath::Coop { fragment, rounds });
        assert_eq!(coop_path(&offer(&H200, (32, 32))), coop(16, 1));
        assert_eq!(coop_path(&offer(&H200, (32, 64))), coop(16, 2));
        let f32_only = [P { ab_type: T::F32, ..H200[0] }];
        assert!(coop_path(&offer(&f32_only, (32, 32))).unwrap_err().contains("16x16x16 or 8x8x8 f16→f32"));
        // lavapipe of Mesa 26.2: 8x8x8 only, subgroups of 8.
        let small =
            [P { m_size: 8, n_size: 8, k_size: 8, ..H200[0] }, P { m_size: 8, n_size: 8, k_size: 8, ..H200[1] }];
        assert_eq!(coop_path(&offer(&small, (8, 8))), coop(8, 1));
        let both = [small[0], H200[0]];
        assert_eq!(coop_path(&offer(&both, (32, 32))), coop(16, 1), "16 preferred");
        let odd = [P { m_size: 16, n_size: 8, k_size: 16, ..H200[0] }];
        assert!(coop_path(&offer(&odd, (32, 32))).is_err(), "not square");
        assert!(coop_path(&offer(&[], (32, 32))).is_err(), "older lavapipe offers none");
        assert!(coop_path(&offer(&H200, (32, 256))).unwrap_err().contains("subgroup sizes"));
        assert!(coop_path(&offer(&H200, (24, 24))).is_err());
        let mut o = offer(&H200, (32, 32));
        o.features = o.features - wgpu::Features::SHADER_F16;
        assert!(coop_path(&o).unwrap_err().contains("SHADER_F16"));
        let mut o = offer(&H200, (32, 32));
        o.workgroup_bytes = 16 << 10;
        assert!(coop_path(&o).unwrap_err().contains("bytes"));
    }

    #[test]
    fn features_are_requested_all_or_none_and_only_when_wanted() {
        let all =
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP;
        assert_eq!(coop_features(all | wgpu::Features::TIMESTAMP_QUERY, true), all);
        assert_eq!(coop_features(all, false), wgpu::Features::empty());
        let lavapipe = wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        assert_eq!(coop_features(lavapipe, true), wgpu::Features::empty());
        assert!(!experimental_token(lavapipe).is_enabled());
        assert!(experimental_token(all).is_enabled());
    }
}
