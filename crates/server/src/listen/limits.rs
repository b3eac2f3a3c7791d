//! [`ListenLimits`]: the listen path's limits as the router applies them — streams per node,
//! URIs per listen, the keepalive, a stream's lifetime (jittered per stream), and the byte and
//! per-address budgets.

use std::time::Duration;

use tokio::time::Instant;

use super::budget::BudgetLimits;

/// Limits of the listen path (set through [`HandlerOptions`](crate::HandlerOptions), which
/// documents each and its default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListenLimits {
    pub(crate) max_streams: usize,
    pub(crate) max_uris_per_listen: usize,
    pub(crate) keepalive: Duration,
    pub(crate) max_lifetime: Option<Duration>,
    /// URI length, subscription bytes and per-address streams (see `budget`).
    pub(crate) budget: BudgetLimits,
}

impl Default for ListenLimits {
    fn default() -> Self {
        ListenLimits {
            max_streams: 10_000,
            max_uris_per_listen: 1_000,
            keepalive: Duration::from_secs(15),
            max_lifetime: None,
            budget: BudgetLimits::default(),
        }
    }
}

impl ListenLimits {
    /// How often the router's tick runs (keepalives and lifetime checks), if it runs at all.
    pub(crate) fn tick_interval(&self) -> Option<Duration> {
        match (self.keepalive.is_zero(), self.max_lifetime) {
            (false, _) => Some(self.keepalive),
            (true, Some(_)) => Some(Duration::from_secs(15)),
            (true, None) => None,
        }
    }

    /// When a stream registered `now` with router key `key` expires (jittered ±10 %).
    pub(super) fn expiry(&self, key: u64, now: Instant) -> Option<Instant> {
        let lifetime = self.max_lifetime?;
        // A cheap, well-spread per-stream factor in [0.9, 1.1) (Fibonacci hashing of the key).
        let spread = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44) as f64 / (1u64 << 20) as f64;
        Some(now + lifetime.mul_f64(0.9 + 0.2 * spread))
    }
}
