//! [`FleetLimits`]: per-principal limits that hold across the fleet, through the bus's
//! [`Keyspace`] — [`LimitScope::Fleet`](crate::auth::LimitScope::Fleet). The per-replica limits of
//! `limits.rs` stay the cheap option, and the fallback whenever the keyspace errs (a broker
//! outage must not refuse every request).
//!
//! - **Request rate**: a fixed window per principal — key `r.<principal>.<window>` in the
//!   keyspace `limit-rate` (TTL one window), incremented once per request (one keyspace round
//!   trip); past `rate × window` the request gets 429 with `Retry-After` until the window ends.
//!   The window is `max(1 s, burst / rate)`; at a window boundary up to twice the allowance may
//!   pass within one window's time (the price of one round trip instead of two). Windows are
//!   numbered from each node's wall clock: clocks a little apart shift a node's windows a
//!   little.
//! - **Open listen streams**: a count per principal *and node* — key `s.<principal>.<node>` in
//!   the keyspace `limit-streams`, whose TTL is the lease — written by the node that holds the
//!   streams, always with **its exact count** (what it holds right then, not a delta): on open,
//!   on close, and every third of the lease. So a write lost in a broker blip, or an entry
//!   lost in a failover, is true again at the next renewal; nothing drifts. Writes are
//!   compare-and-set on the revision read, with the count read after it, so of two writes
//!   racing on one node the last to land holds the newer count. The quota is the sum over the
//!   fleet's live members (one write plus one read per other member, concurrently, at each
//!   open); a crashed node's streams stop counting once its membership expires (and its
//!   entries after the lease). Two opens racing on different nodes may both be refused, never
//!   both admitted past the quota.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::join_all;
use mcp_fleet_bus::{Keyspace, ServerEventBus};
use tokio::sync::mpsc;

use super::limits::{LimitReached, Rate, RetryAfter};
use crate::error::ServerError;

/// The live members' node ids, this node's included (from the fleet membership).
pub(crate) type Members = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Fleet-wide rate and stream quota. A cheap `Clone` handle around an `Arc`.
#[derive(Clone)]
pub(crate) struct FleetLimits {
    inner: Arc<Inner>,
}

struct Inner {
    rate: Option<(Arc<dyn Keyspace>, Window)>,
    streams: Arc<dyn Keyspace>,
    max_streams: usize,
    node: String,
    members: Members,
    /// Streams this node holds per principal digest. A std mutex: map updates only.
    held: Mutex<HashMap<String, u64>>,
    /// Closed streams' principals, for the task that decrements their counters.
    closed: mpsc::UnboundedSender<String>,
}

/// The fixed window of the fleet-wide rate.
#[derive(Debug, Clone, Copy)]
struct Window {
    length: Duration,
    allowance: i64,
}

impl Window {
    fn of(rate: Rate) -> Window {
        let length = Duration::try_from_secs_f64(f64::from(rate.burst) / rate.per_second)
            .unwrap_or(Duration::MAX)
            .clamp(Duration::from_secs(1), Duration::from_secs(3600));
        let allowance = (rate.per_second * length.as_secs_f64()).round().max(1.0) as i64;
        Window { length, allowance }
    }
}

/// One listen stream counted in the fleet; dropping it gives the slot back.
pub(crate) struct FleetSlot {
    inner: Arc<Inner>,
    principal: String,
}

impl std::fmt::Debug for FleetSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetSlot").field("principal", &self.principal).finish()
    }
}

impl FleetLimits {
    /// Open the keyspaces on `bus` and start the task that renews this node's counters (until
    /// the last handle is dropped). `settings`: the stream quota, the rate, and the lease (how
    /// long a silent node's streams keep counting).
    pub(crate) async fn open(
        bus: &Arc<dyn ServerEventBus>,
        settings: (usize, Option<Rate>, Duration),
        node: &str,
        members: Members,
    ) -> Result<FleetLimits, ServerError> {
        let (max_streams, rate, lease) = settings;
        let rate = match rate {
            Some(rate) => {
                let window = Window::of(rate);
                Some((bus.keyspace("limit-rate", window.length).await?, window))
            }
            None => None,
        };
        let streams = bus.keyspace("limit-streams", lease).await?;
        let (closed, closed_rx) = mpsc::unbounded_channel();
        let inner = Inner { rate, streams, max_streams, node: digest(node), members, held: Mutex::default(), closed };
        let limits = FleetLimits { inner: Arc::new(inner) };
        tokio::spawn(renew(Arc::downgrade(&limits.inner), closed_rx, lease / 3));
        Ok(limits)
    }

    /// Count `requests` requests of `principal` (its limit key; a 2025-03-26 batch counts as
    /// its messages) in the current window (always admitted when no rate is configured); the
    /// outer `Err` when the keyspace erred (the caller falls back to the per-replica limit).
    pub(crate) async fn check_requests(
        &self,
        principal: &str,
        requests: u32,
    ) -> Result<Result<(), RetryAfter>, ServerError> {
        let Some((keyspace, window)) = &self.inner.rate else { return Ok(Ok(())) };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let index = now.as_millis() / window.length.as_millis().max(1);
        let count = keyspace.increment(&format!("r.{}.{index}", digest(principal)), i64::from(requests)).await?;
        if count <= window.allowance {
            return Ok(Ok(()));
        }
        let ends = Duration::from_millis(u64::try_from((index + 1) * window.length.as_millis()).unwrap_or(u64::MAX));
        Ok(Err(RetryAfter(ends.saturating_sub(now))))
    }

    /// Take one of `principal`'s stream slots in the fleet; `Err` when the keyspace erred.
    pub(crate) async fn acquire_stream(&self, principal: &str) -> Result<Result<FleetSlot, LimitReached>, ServerError> {
        let who = digest(principal);
        *lock(&self.inner.held).entry(who.clone()).or_insert(0) += 1;
        // From here on, a refusal, an error (the count is written again, exactly) or the
        // caller going away gives the slot back.
        let slot = FleetSlot { inner: self.inner.clone(), principal: who.clone() };
        let mine = write_count(&self.inner, &who).await?;
        let others = (self.inner.members)().into_iter().map(|m| digest(&m)).filter(|m| *m != self.inner.node);
        let reads = join_all(others.map(|node| {
            let key = stream_key(&who, &node);
            async move { self.inner.streams.get(&key).await }
        }))
        .await;
        let mut total = i64::try_from(mine).unwrap_or(i64::MAX);
        for read in reads {
            if let Some(record) = read? {
                total = total.saturating_add(mcp_fleet_bus::parse_counter("", &record.value).unwrap_or(0).max(0));
            }
        }
        if total > i64::try_from(self.inner.max_streams).unwrap_or(i64::MAX) {
            return Ok(Err(LimitReached { limit: self.inner.max_streams }));
        }
        Ok(Ok(slot))
    }
}

/// Most compare-and-set rounds of one count write (only this node's writes of one principal
/// contend, and each round one of them wins).
const WRITE_ATTEMPTS: usize = 32;

/// Write this node's exact count of `principal`'s streams (renewing its lease); answers it.
/// The count is read after the entry's revision, and written only while that revision holds:
/// a write that loses to another is done again with the count then, so the entry ends at the
/// count after the last change, whatever order racing writes land in.
async fn write_count(inner: &Inner, principal: &str) -> Result<u64, mcp_fleet_bus::BusError> {
    let key = stream_key(principal, &inner.node);
    for _ in 0..WRITE_ATTEMPTS {
        let found = inner.streams.get(&key).await?;
        let count = lock(&inner.held).get(principal).copied().unwrap_or(0);
        let value = count.to_string().into_bytes();
        let written = match found {
            Some(record) => inner.streams.compare_and_set(&key, record.revision, value).await?.is_some(),
            None => inner.streams.create(&key, value).await?.is_some(),
        };
        if written {
            return Ok(count);
        }
    }
    Err(mcp_fleet_bus::BusError::Backend(format!("stream count {key} kept changing under {WRITE_ATTEMPTS} writes")))
}

fn release_held(inner: &Inner, principal: &str) {
    let mut held = lock(&inner.held);
    if let Some(count) = held.get_mut(principal) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            held.remove(principal);
        }
    }
}

impl Drop for FleetSlot {
    fn drop(&mut self) {
        release_held(&self.inner, &self.principal);
        // The renewing task writes the new count (a drop cannot await).
        let _ = self.inner.closed.send(std::mem::take(&mut self.principal));
    }
}

/// Write the counts of closed streams' principals as they close, and every count this node
/// holds every `every` (renewing their lease, and making any that went wrong true again), until
/// the last handle is dropped.
async fn renew(limits: std::sync::Weak<Inner>, mut closed: mpsc::UnboundedReceiver<String>, every: Duration) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    loop {
        let principals = tokio::select! {
            closed = closed.recv() => match closed {
                Some(principal) => vec![principal],
                None => return, // every handle is gone
            },
            _ = tick.tick() => {
                let Some(inner) = limits.upgrade() else { return };
                let held: Vec<String> = lock(&inner.held).keys().cloned().collect();
                held
            }
        };
        let Some(inner) = limits.upgrade() else { return };
        for result in join_all(principals.iter().map(|principal| write_count(&inner, principal))).await {
            if let Err(error) = result {
                tracing::warn!(%error, "could not write a fleet-wide stream count; the next renewal does");
            }
        }
    }
}

fn stream_key(principal: &str, node: &str) -> String {
    format!("s.{principal}.{node}")
}

/// A keyspace-safe fixed-length name for any string (principal keys and node ids hold any
/// character): 128 bits of SHA-256, hex.
fn digest(value: &str) -> String {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(value.as_bytes());
    hash[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Lock, ignoring poisoning: the map holds plain counts.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_fleet_bus::MemoryBus;

    async fn fleet(bus: &MemoryBus, node: &str, members: &[&str], max: usize) -> FleetLimits {
        let bus: Arc<dyn ServerEventBus> = Arc::new(bus.as_node(node));
        let members: Vec<String> = members.iter().map(|m| (*m).to_owned()).collect();
        let rate = Some(Rate { per_second: 2.0, burst: 2 });
        FleetLimits::open(&bus, (max, rate, Duration::from_secs(30)), node, Arc::new(move || members.clone()))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_stream_quota_is_the_sum_over_the_members_and_closing_gives_it_back() {
        let bus = MemoryBus::new();
        let (a, b) = (fleet(&bus, "a", &["a", "b"], 2).await, fleet(&bus, "b", &["a", "b"], 2).await);
        let on_a = a.acquire_stream("p").await.unwrap().unwrap();
        let _on_b = b.acquire_stream("p").await.unwrap().unwrap();
        assert!(a.acquire_stream("p").await.unwrap().is_err(), "two in the fleet already");
        assert!(b.acquire_stream("q").await.unwrap().is_ok(), "another principal");
        drop(on_a);
        tokio::time::timeout(Duration::from_secs(5), async {
            while b.acquire_stream("p").await.unwrap().is_err() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the closed stream's slot comes back");
    }

    /// Nodes `a` and `b` with a quota of 2 and a lease of 300 ms (renewed every 100 ms), and
    /// the keyspace their counts are in.
    async fn short_lease(bus: &MemoryBus) -> (FleetLimits, FleetLimits, Arc<dyn Keyspace>) {
        let lease = Duration::from_millis(300);
        let open = |node: &'static str| {
            let bus: Arc<dyn ServerEventBus> = Arc::new(bus.as_node(node));
            let members = Arc::new(|| vec!["a".to_owned(), "b".to_owned()]);
            async move { FleetLimits::open(&bus, (2, None, lease), node, members).await.unwrap() }
        };
        let keys = bus.keyspace("limit-streams", lease).await.unwrap();
        (open("a").await, open("b").await, keys)
    }

    /// Whether `limits` admits one more stream of `p` (given back at once).
    async fn admits(limits: &FleetLimits) -> bool {
        limits.acquire_stream("p").await.unwrap().is_ok()
    }

    #[tokio::test]
    async fn a_lost_decrement_heals_at_the_next_renewal() {
        let bus = MemoryBus::new();
        let (a, b, keys) = short_lease(&bus).await;
        let _open = a.acquire_stream("p").await.unwrap().unwrap();
        // A close whose decrement was lost: a's entry says 2 while it holds 1.
        keys.put(&stream_key(&digest("p"), &digest("a")), b"2".to_vec()).await.unwrap();
        assert!(!admits(&b).await, "the wrong count is read");
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(admits(&b).await, "a's renewal wrote its true count, 1");
    }

    #[tokio::test]
    async fn a_count_lost_while_streams_are_open_comes_back_at_the_next_renewal() {
        let bus = MemoryBus::new();
        let (a, b, keys) = short_lease(&bus).await;
        let _open = [a.acquire_stream("p").await.unwrap().unwrap(), a.acquire_stream("p").await.unwrap().unwrap()];
        assert!(!admits(&b).await);
        // A failover lost a's entry while its two streams are open.
        keys.delete(&stream_key(&digest("p"), &digest("a"))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!admits(&b).await, "a's renewal wrote its true count, 2, again");
        assert_eq!(keys.get(&stream_key(&digest("p"), &digest("a"))).await.unwrap().unwrap().value, b"2");
    }

    #[tokio::test]
    async fn racing_opens_and_closes_on_one_node_leave_its_exact_count() {
        let bus = MemoryBus::new();
        let a = fleet(&bus, "a", &["a"], 100).await;
        let keys = bus.keyspace("limit-streams", Duration::from_secs(30)).await.unwrap();
        let count = async || {
            let record = keys.get(&stream_key(&digest("p"), &digest("a"))).await.unwrap().unwrap();
            String::from_utf8(record.value).unwrap()
        };
        let mut open: Vec<_> =
            join_all((0..20).map(|_| a.acquire_stream("p"))).await.into_iter().map(|s| s.unwrap().unwrap()).collect();
        assert_eq!(count().await, "20");
        open.truncate(10);
        tokio::time::timeout(Duration::from_secs(5), async {
            while count().await != "10" {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the closes are written");
    }

    #[tokio::test]
    async fn the_rate_is_counted_in_one_window_for_the_whole_fleet() {
        let bus = MemoryBus::new();
        let (a, b) = (fleet(&bus, "a", &["a", "b"], 2).await, fleet(&bus, "b", &["a", "b"], 2).await);
        // Window 1 s, allowance 2: a third request anywhere in the window waits for its end.
        let mut outcomes = Vec::new();
        for limits in [&a, &b, &a, &b, &a] {
            outcomes.push(limits.check_requests("p", 1).await.unwrap());
        }
        let refused = outcomes.iter().filter(|o| o.is_err()).count();
        assert!(refused >= 1, "{outcomes:?}");
        if let Some(Err(RetryAfter(wait))) = outcomes.iter().find(|o| o.is_err()) {
            assert!(*wait <= Duration::from_secs(1), "{wait:?}");
        }
        assert!(a.check_requests("q", 1).await.unwrap().is_ok(), "another principal's window");
        assert_eq!(Window::of(Rate { per_second: 10.0, burst: 20 }).allowance, 20);
        assert_eq!(Window::of(Rate { per_second: 100.0, burst: 1 }).length, Duration::from_secs(1));
    }
}
