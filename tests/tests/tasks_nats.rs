//! The tasks extension on a fleet of three nodes sharing a real NATS JetStream
//! (`MCP_FLEET_NATS_URL`, default 127.0.0.1:4222): the task store is a key-value bucket; the
//! same behaviours as `tasks_redis.rs`.
//!
//! Skipped (with `skipped: nats not reachable at …`) when NATS is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

mcp_fleet_tests::task_fleet_tests!(mcp_fleet_tests::cluster::Broker::Nats);
