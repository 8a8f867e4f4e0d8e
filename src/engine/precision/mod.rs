//! Precision policies (FracTrain PFQ, DPC, static) for quantized-compute simulation: their
//! syntax, bit schedules, the DPC capacity mapping, the DFQ gates' options and the BitOPs count they lead to.

pub mod bitops;
pub mod dpc;
pub mod geometry;
pub mod policy;
pub mod run;
pub mod schedule;

pub use policy::{Dfq, Pfq, Precision};
pub use run::{DfqPlan, PrecisionRun, QuantPlan};
