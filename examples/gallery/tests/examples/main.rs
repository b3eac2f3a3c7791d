//! Every example of the gallery run as what it is, a binary: each test starts one (listening on
//! port 0), reads its address from its first line, talks MCP 2026-07-28 to it over real HTTP
//! and checks its answers; the process is killed when the test ends, passed or not.

#![allow(clippy::unwrap_used)] // in a test, a panic at the failing line is the report we want

mod support;

mod calculator;
mod config_reloader;
mod deploy_events;
mod hello;
mod long_task;
mod multi_tenant;
mod oauth;
mod structured_output;
mod two_nodes_redis;
mod upstream_watch;
