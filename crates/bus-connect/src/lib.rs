//! Choosing the event bus backend by URL — the one place that maps a scheme to a backend
//! crate, so the server framework depends on the bus trait only (arrows point inward).
//!
//! | URL | Backend |
//! |---|---|
//! | `memory://` | [`MemoryBus`]: one process |
//! | `redis://…`, `rediss://…`, `redis+sentinel://…/MASTER`, `redis+cluster://h1,h2` | `mcp-fleet-bus-redis` (feature `redis`) |
//! | `nats://host:4222[,host:4222…]`, `tls://…` | `mcp-fleet-bus-nats` (feature `nats`) |
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let bus = mcp_fleet_bus_connect::connect("memory://", "node-a").await.unwrap();
//! assert_eq!(bus.backend(), "memory");
//! // Then: HandlerOptions::default().bus(bus)
//! # });
//! ```
//!
//! A URL may carry credentials (`rediss://:password@…`, `nats://…?token=…`): nothing here logs
//! it as given, and every error coming back is scrubbed of its secrets (see
//! [`mcp_fleet_bus::redact`]) whatever the backend put in its message.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::redact::{redact_url, scrub, url_secrets};
use mcp_fleet_bus::{Backoff, BusError, MemoryBus, ServerEventBus};

/// Connect the bus named by `url`, publishing as `node_id`. An error never quotes the URL's
/// secrets.
pub async fn connect(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    connect_unscrubbed(url, node_id).await.map_err(|e| without_secrets(e, url))
}

async fn connect_unscrubbed(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or(url);
    match scheme {
        "memory" => Ok(Arc::new(MemoryBus::new().as_node(node_id))),
        // Boxed: the backends' connect futures are deep, and every embedding async fn would
        // otherwise inline their layout.
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster" | "rediss+cluster" => {
            Box::pin(mcp_fleet_bus_redis::connect(url, node_id)).await
        }
        #[cfg(feature = "nats")]
        "nats" | "tls" => Box::pin(mcp_fleet_bus_nats::connect(url, node_id)).await,
        other => Err(BusError::Config(format!(
            "unsupported event bus URL scheme {other:?}: use memory://, redis://, rediss://, redis+sentinel://, redis+cluster:// or nats:// (with the matching feature)"
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
                tracing::warn!(url = %redact_url(url), error = %err, retry_in = ?delay, "event bus unreachable; retrying");
                tokio::time::sleep(delay).await;
            }
            other => return other,
        }
    }
}

/// `err` with the secrets of `url` removed from its message.
fn without_secrets(err: BusError, url: &str) -> BusError {
    let secrets = url_secrets(url);
    match err {
        BusError::Unavailable(m) => BusError::Unavailable(scrub(&m, &secrets)),
        BusError::Config(m) => BusError::Config(scrub(&m, &secrets)),
        BusError::Backend(m) => BusError::Backend(scrub(&m, &secrets)),
        timeout @ BusError::Timeout(_) => timeout,
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

    #[cfg(all(feature = "redis", feature = "nats"))]
    #[tokio::test]
    async fn errors_never_quote_the_secrets_of_the_url() {
        for url in [
            "redis+sentinel://u:SECRET-1@s1:26379/m?sentinel_pasword=SECRET-2",
            "nats://u:SECRET-3@a:4222,b:SECRET-4@bad:port:99",
            "kafka://u:SECRET-5@x",
            "redis://u:SECRET-6@127.0.0.1:1/0",
            "redis+cluster://u:SECRET-7@127.0.0.1:1?shard_password=SECRET-8",
            "redis+cluster://u:SECRET-9@127.0.0.1:1",
        ] {
            let err = connect(url, "n").await.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(!err.is_empty(), "{url} fails");
            assert!(!err.contains("SECRET"), "{url}: {err}");
        }
    }

    #[tokio::test]
    async fn unknown_schemes_are_a_config_error() {
        assert!(matches!(connect("kafka://x", "n").await, Err(BusError::Config(_))));
        assert_eq!(connect("memory://", "n").await.map(|b| b.node_id().to_owned()).ok().as_deref(), Some("n"));
    }
}
