//! [`ReconnectPolicy`]: exponential backoff with jitter for reconnecting listen streams,
//! shared connections and retried snapshots.
//!
//! Delays double from `initial` up to `max`; each is drawn uniformly from the upper half of
//! its step ("equal jitter"), so a fleet of clients cut off at the same instant does not come
//! back in lockstep, yet no client retries sooner than half its step.

use std::time::Duration;

/// When to retry after consecutive failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// The first delay's step. Default 100 ms.
    pub initial: Duration,
    /// The largest step. Default 30 s.
    pub max: Duration,
    /// A listen stream that stayed up this long resets the failure count. Default 10 s.
    pub stable_after: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(30),
            stable_after: Duration::from_secs(10),
        }
    }
}

impl ReconnectPolicy {
    /// The step after `failures` consecutive failures, before jitter: `initial · 2^failures`,
    /// capped at `max`.
    pub fn step(&self, failures: u32) -> Duration {
        let factor = 1u32.checked_shl(failures.min(31)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// The delay to wait after `failures` consecutive failures: uniform in
    /// `[step / 2, step]`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = mcp_fleet_client::ReconnectPolicy::default();
    /// let d = policy.delay(3); // step 800 ms
    /// assert!(d >= Duration::from_millis(400) && d <= Duration::from_millis(800));
    /// ```
    pub fn delay(&self, failures: u32) -> Duration {
        let step = self.step(failures);
        let half = step / 2;
        half + half.mul_f64(rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_double_up_to_the_cap_and_jitter_stays_in_the_upper_half() {
        let p =
            ReconnectPolicy { initial: Duration::from_millis(100), max: Duration::from_secs(2), ..Default::default() };
        let steps: Vec<_> = (0..7).map(|n| p.step(n).as_millis()).collect();
        assert_eq!(steps, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(p.step(u32::MAX), Duration::from_secs(2));
        for n in 0..10 {
            let d = p.delay(n);
            assert!(d >= p.step(n) / 2 && d <= p.step(n), "{d:?} for {n}");
        }
    }
}
