//! A fleet of three nodes on a real NATS JetStream (`MCP_FLEET_NATS_URL`, default
//! 127.0.0.1:4222), each with its own connection to one private stream and subject prefix: a
//! change published on any node reaches exactly the matching listen streams on every node,
//! tenant scopes never leak, and forcing every node's client to reconnect mid-publishing loses
//! no last change.
//!
//! Skipped (with `skipped: nats not reachable at …`) when NATS is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

mcp_fleet_tests::fleet_spec_tests!(mcp_fleet_tests::cluster::Broker::Nats);
