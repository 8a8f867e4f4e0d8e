//! Precision policies (FracTrain PFQ, DPC, static) for quantized-compute simulation: their
//! syntax, bit schedules (PFQ's options, cadence and plateau rule), the DPC capacity mapping,
//! the DFQ gates' options and the BitOPs count they lead to.

pub mod bitops;
pub mod dpc;
pub mod geometry;
pub mod pfq;
pub mod policy;
pub mod run;
pub mod schedule;

pub use pfq::{Cadence, Pfq, Signal};
pub use policy::{Dfq, Precision};
pub use run::{DfqPlan, PrecisionRun, QuantPlan};
pub use schedule::{Check, PfqState};
