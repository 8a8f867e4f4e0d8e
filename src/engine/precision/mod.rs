//! Precision policies (FracTrain PFQ, DPC, static) for quantized-compute simulation: their
//! syntax, bit schedules, the DPC capacity mapping and the BitOPs count they lead to.

pub mod bitops;
pub mod dpc;
pub mod geometry;
pub mod policy;
pub mod run;
pub mod schedule;

pub use policy::{Pfq, Precision};
pub use run::{PrecisionRun, QuantPlan};
