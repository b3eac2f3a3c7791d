//! The live progress line on stderr (indicatif): phase, streams open, events published,
//! deliveries, p50/p99 so far, overdue ("lost" if it stays), re-lists. Hidden with
//! `--quiet`; when stderr is not a terminal (a run logged to a file) the same line is printed
//! plainly every [`PLAIN_EVERY`].

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::results::{LiveStats, histogram};

/// How often the plain (non-terminal) progress line is printed.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The progress line.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    /// When stderr is not a terminal and not quiet: when the plain line was last printed
    /// (a mutex so `update` takes `&self`; only the coordinator's task calls it).
    plain: Option<Mutex<Option<Instant>>>,
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
        let plain = (!quiet && !std::io::stderr().is_terminal()).then(|| Mutex::new(None));
        Progress { bar, plain }
    }

    /// Show `phase` with `live` and `published` events.
    pub fn update(&self, phase: &str, live: &LiveStats, published: u64) {
        let (p50, p99) = match histogram(&live.latency) {
            Ok(h) if !h.is_empty() => (h.value_at_quantile(0.5), h.value_at_quantile(0.99)),
            _ => (0, 0),
        };
        let line = format!(
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
        );
        if let Some(last) = &self.plain {
            let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_none_or(|t| t.elapsed() >= PLAIN_EVERY) {
                *last = Some(Instant::now());
                eprintln!("{line}");
            }
        }
        self.bar.set_message(line);
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
