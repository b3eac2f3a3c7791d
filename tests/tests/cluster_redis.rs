//! A fleet of three nodes on a real Redis (`MCP_FLEET_REDIS_URL`, default 127.0.0.1:6379),
//! each with its own connection to one private stream: a change published on any node reaches
//! exactly the matching listen streams on every node, tenant scopes never leak, and cutting the
//! nodes' tailing connections mid-publishing loses no last change.
//!
//! Skipped (with `skipped: redis not reachable at …`) when Redis is down, unless
//! `MCP_FLEET_REQUIRE_BROKERS=1`.

mcp_fleet_tests::fleet_spec_tests!(mcp_fleet_tests::cluster::Broker::Redis);
