//! Choosing the event bus backend by URL — the one place that maps a scheme to a backend
//! crate, so the server framework depends on the bus trait only (arrows point inward).
//!
//! | URL | Backend |
//! |---|---|
//! | `memory://` | [`MemoryBus`]: one process |
//! | `redis://…`, `rediss://…`, `redis+sentinel://…/MASTER` | `mcp-fleet-bus-redis` (feature `redis`) |
//! | `nats://host:4222[,host:4222…]`, `tls://…` | `mcp-fleet-bus-nats` (feature `nats`) |
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let bus = mcp_fleet_bus_connect::connect("memory://", "node-a").await.unwrap();
//! assert_eq!(bus.backend(), "memory");
//! // Then: HandlerOptions::default().bus(bus)
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::{Backoff, BusError, MemoryBus, ServerEventBus};

/// Connect the bus named by `url`, publishing as `node_id`.
pub async fn connect(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or(url);
    match scheme {
        "memory" => Ok(Arc::new(MemoryBus::new().as_node(node_id))),
        // Boxed: the backends' connect futures are deep, and every embedding async fn would
        // otherwise inline their layout.
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" => {
            Box::pin(mcp_fleet_bus_redis::connect(url, node_id)).await
        }
        #[cfg(feature = "nats")]
        "nats" | "tls" => Box::pin(mcp_fleet_bus_nats::connect(url, node_id)).await,
        other => Err(BusError::Config(format!(
            "unsupported event bus URL scheme {other:?}: use memory://, redis://, rediss://, redis+sentinel:// or nats:// (with the matching feature)"
        ))),
    }
}

/// [`connect`], retrying with backoff while the broker is unreachable (not on a configuration
/// error) for up to `patience`, so a replica that starts during a broker blip waits instead of
/// crash-looping.
pub async fn connect_patiently(
    url: &str,
    node_id: &str,
    patience: Duration,
) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let deadline = tokio::time::Instant::now() + patience;
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        match connect(url, node_id).await {
            Err(err @ (BusError::Unavailable(_) | BusError::Timeout(_)))
                if tokio::time::Instant::now() + backoff.peek() < deadline =>
            {
                let delay = backoff.next_delay();
                tracing::warn!(%url, error = %err, retry_in = ?delay, "event bus unreachable; retrying");
                tokio::time::sleep(delay).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "redis")]
    #[tokio::test]
    async fn an_unreachable_broker_is_retried_until_patience_runs_out() {
        let started = tokio::time::Instant::now();
        let result = connect_patiently("redis://127.0.0.1:1/0", "n", Duration::from_millis(800)).await;
        assert!(matches!(result, Err(BusError::Unavailable(_))), "{:?}", result.err());
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "waited {waited:?}");
        // A configuration error is final at once.
        let started = tokio::time::Instant::now();
        assert!(matches!(connect_patiently("kafka://x", "n", Duration::from_secs(5)).await, Err(BusError::Config(_))));
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[tokio::test]
    async fn unknown_schemes_are_a_config_error() {
        assert!(matches!(connect("kafka://x", "n").await, Err(BusError::Config(_))));
        assert_eq!(connect("memory://", "n").await.map(|b| b.node_id().to_owned()).ok().as_deref(), Some("n"));
    }
}
