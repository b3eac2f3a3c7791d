//! The live progress line on stderr (indicatif): phase, streams open, events published,
//! deliveries, p50/p99 so far, overdue ("lost" if it stays), re-lists. Hidden with `--quiet`
//! or when stderr is not a terminal.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::results::{LiveStats, histogram};

/// The progress line.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A progress line (hidden if `quiet`).
    pub fn new(quiet: bool) -> Progress {
        let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr_with_hz(4) };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress { bar }
    }

    /// Show `phase` with `live` and `published` events.
    pub fn update(&self, phase: &str, live: &LiveStats, published: u64) {
        let (p50, p99) = match histogram(&live.latency) {
            Ok(h) if !h.is_empty() => (h.value_at_quantile(0.5), h.value_at_quantile(0.99)),
            _ => (0, 0),
        };
        self.bar.set_message(format!(
            "{phase}: streams {}/{} open · events {published} · deliveries {} · p50 {} p99 {} · lost {} · relists {} ({} errors) · reconnects {}",
            live.ready,
            live.streams,
            live.deliveries,
            ms(p50),
            ms(p99),
            live.overdue,
            live.requests,
            live.request_errors,
            live.reconnects,
        ));
    }

    /// Remove the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Microseconds as milliseconds, for people.
pub fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}
