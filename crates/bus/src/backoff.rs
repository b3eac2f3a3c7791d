//! [`Backoff`]: exponential delays between retries (reconnecting a consumer, resubscribing,
//! republishing), doubling from a minimum up to a maximum, with jitter. One type, so every
//! retry loop in the fleet backs off the same way.
//!
//! Each delay is drawn uniformly from the upper half of its step ("equal jitter", as the
//! client's `ReconnectPolicy` does): a fleet cut off from a restarted broker at the same
//! instant does not come back in lockstep, yet no node retries sooner than half its step.

use std::time::Duration;

/// Exponential backoff with jitter: steps `min`, `2·min`, `4·min`, … capped at `max`; each
/// delay is uniform in `[step / 2, step]`.
///
/// ```
/// use std::time::Duration;
/// use mcp_fleet_bus::Backoff;
/// let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
/// let within = |d: Duration, step: u64| d >= Duration::from_millis(step / 2) && d <= Duration::from_millis(step);
/// assert!(within(b.next_delay(), 100));
/// assert!(within(b.next_delay(), 200));
/// assert!(within(b.next_delay(), 300));
/// b.reset();
/// assert_eq!(b.peek(), Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Steps from `min` up to `max` (`max` below `min` is raised to it).
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { min, max: max.max(min), next: min }
    }

    /// The next step (the longest the next delay can be), without advancing.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The next delay, uniform in the upper half of the current step; the step after is twice
    /// as long (up to the maximum).
    pub fn next_delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let half = step / 2;
        half + half.mul_f64(rand::random::<f64>())
    }

    /// Start again from the minimum (after a success).
    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_double_up_to_the_cap_and_delays_stay_in_their_upper_half() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        for step in [100, 200, 400, 800, 1600, 2000, 2000] {
            assert_eq!(b.peek(), Duration::from_millis(step));
            let d = b.next_delay();
            assert!(d >= Duration::from_millis(step / 2) && d <= Duration::from_millis(step), "{d:?} for {step}");
        }
    }

    #[test]
    fn a_fleet_cut_off_at_once_does_not_retry_in_lockstep() {
        let fleet: Vec<Duration> = (0..20)
            .map(|_| {
                let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(30));
                (0..5).map(|_| b.next_delay()).sum()
            })
            .collect();
        let mut distinct = fleet.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 15, "20 nodes retrying after the same failures: {fleet:?}");
    }
}
