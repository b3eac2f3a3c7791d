//! The HTML report (`--html PATH`, and `report A.json B.json --html PATH` for runs side by
//! side): one self-contained page per call, built by pure functions from [`Report`]s to a
//! `String`.
//!
//! - [`page`]: the document — verification up front, inputs, figures, charts, node counters.
//! - [`chart`]: hand-written SVG line charts (no script, no fetch), and HTML escaping.
//! - `file`: reading `--json` files and writing pages (the only I/O here).
//!
//! The page declares `default-src 'none'`, so a browser refuses any fetch it might make: it
//! reads offline or not at all. The figures come from the report's own data (its summaries,
//! its exact HDR histograms and its per-publish timeline), never re-measured here.
//!
//! [`Report`]: crate::report::Report

pub mod chart;
pub mod file;
pub mod page;

pub use chart::escape;
pub use file::write_comparison;
pub use page::{Run, render};
