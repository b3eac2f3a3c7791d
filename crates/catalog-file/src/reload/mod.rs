//! Reloading: keep a server's catalog equal to a file that may change under it.
//!
//! - `reloader`: [`CatalogReloader`] — one reload (read, hash, parse, validate, apply), serialized,
//!   with its outcome logged as one line and counted; [`CatalogReloader::reload_now`] is the
//!   explicit trigger.
//! - `watch`: [`CatalogReloader::run`] — the loop that reloads on directory events (debounced)
//!   and on a poll timer.
//! - `signal`: [`reload_on_sighup`] — SIGHUP as an explicit trigger.
//! - `stats`: [`ReloadStats`] — counters the node exports as metrics.

mod reloader;
#[cfg(unix)]
mod signal;
mod stats;
mod watch;

pub use reloader::{CatalogReloader, Reload, ReloadOptions};
#[cfg(unix)]
pub use signal::reload_on_sighup;
pub use stats::{RELOAD_FAILURES_METRIC, RELOADS_METRIC, ReloadStats};
