//! Choosing the event bus backend by URL: `memory://`, `redis://host:port/db` (or
//! `rediss://`), `nats://host:port`. The backends live in their own crates; this is the one
//! place that maps a scheme to one of them.

use std::sync::Arc;

use mcp_fleet_bus::{BusError, MemoryBus, ServerEventBus};

/// Connect the bus named by `url`, publishing as `node_id`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let bus = mcp_fleet_server::connect_bus("memory://", "node-a").await.unwrap();
/// assert_eq!(bus.backend(), "memory");
/// # });
/// ```
pub async fn connect_bus(url: &str, node_id: &str) -> Result<Arc<dyn ServerEventBus>, BusError> {
    let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or(url);
    match scheme {
        "memory" => Ok(Arc::new(MemoryBus::new().as_node(node_id))),
        #[cfg(feature = "redis")]
        "redis" | "rediss" => mcp_fleet_bus_redis::connect(url, node_id).await,
        #[cfg(feature = "nats")]
        "nats" | "tls" => mcp_fleet_bus_nats::connect(url, node_id).await,
        other => Err(BusError::Config(format!(
            "unsupported event bus URL scheme {other:?}: use memory://, redis://, rediss:// or nats:// (with the matching feature)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unknown_schemes_are_a_config_error() {
        assert!(matches!(connect_bus("kafka://x", "n").await, Err(BusError::Config(_))));
        assert_eq!(connect_bus("memory://", "n").await.map(|b| b.node_id().to_owned()).ok().as_deref(), Some("n"));
    }
}
