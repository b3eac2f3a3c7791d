//! [`Clock`]: microseconds since the Unix epoch, monotonic within a process and comparable
//! across the loader processes of one run on one machine.
//!
//! Each process reads the wall clock once, then advances it with `Instant` (monotonic, so a
//! wall-clock step during the run cannot reorder events). Parent and workers therefore agree
//! to within the few microseconds it takes to read both clocks at start.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A monotonic microsecond clock anchored to the Unix epoch.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
    origin_unix_us: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// Anchor a clock now.
    pub fn new() -> Clock {
        let origin = Instant::now();
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Clock { origin, origin_unix_us: unix.as_micros() as u64 }
    }

    /// Now, in microseconds since the Unix epoch.
    ///
    /// ```
    /// let clock = mcp_fleet_loadtest::clock::Clock::new();
    /// let (a, b) = (clock.now_us(), clock.now_us());
    /// assert!(b >= a && a > 1_700_000_000_000_000);
    /// ```
    pub fn now_us(&self) -> u64 {
        self.at_us(Instant::now())
    }

    /// An `Instant` of this process, in microseconds since the Unix epoch.
    pub fn at_us(&self, at: Instant) -> u64 {
        self.origin_unix_us + at.saturating_duration_since(self.origin).as_micros() as u64
    }
}
