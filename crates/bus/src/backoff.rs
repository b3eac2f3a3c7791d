//! [`Backoff`]: exponential delays between retries (reconnecting a consumer, resubscribing,
//! republishing), doubling from a minimum up to a maximum. One type, so every retry loop in the
//! fleet backs off the same way.

use std::time::Duration;

/// Exponential backoff: `min`, `2·min`, `4·min`, … capped at `max`.
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_bus::Backoff;
/// let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
/// assert_eq!(b.next_delay(), Duration::from_millis(100));
/// assert_eq!(b.next_delay(), Duration::from_millis(200));
/// assert_eq!(b.next_delay(), Duration::from_millis(300));
/// b.reset();
/// assert_eq!(b.next_delay(), Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Delays from `min` up to `max` (`max` below `min` is raised to it).
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { min, max: max.max(min), next: min }
    }

    /// The next delay, without advancing.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The next delay; the one after is twice as long (up to the maximum).
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    /// Start again from the minimum (after a success).
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}
