//! The tasks extension on a fleet of three nodes sharing a real Redis
//! (`MCP_FLEET_REDIS_URL`, default 127.0.0.1:6379): a task started on one node is polled,
//! answered and cancelled on the others, its notifications reach streams on all of them,
//! another tenant sees nothing, and a node that dies or drains mid-task leaves no task working
//! for ever.
//!
//! Skipped (with `skipped: redis not reachable at …`) when Redis is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

mcp_fleet_tests::task_fleet_tests!(mcp_fleet_tests::cluster::Broker::Redis);
