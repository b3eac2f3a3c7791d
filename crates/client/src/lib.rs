//! Client side of MCP 2026-07-28 change notifications, for Rust hosts: hold a
//! `subscriptions/listen` stream, and keep complete, consistent snapshots of the lists it
//! invalidates — the rediscovery loop every MCP host runs. The fleet's load tester is its
//! first user.
//!
//! - [`endpoint`]: [`Endpoint`], the server URL plus per-request headers (token, tenant).
//! - [`transport`]: [`Transport`] — pooled HTTP/1.1 or h2c, or a [`SharedH2`] connection
//!   many clients multiplex on.
//! - [`rpc`]: [`RpcClient`], one JSON-RPC request per POST with the `_meta` envelope — or,
//!   [`RpcClient::era_2025`], in a 2025-era [`session`].
//! - [`sse`]: [`SseReader`], SSE events from a streaming body.
//! - [`message`]: [`ListenMessage`], what a listen stream says (with the fleet's event stamp).
//! - [`capabilities`]: [`ServerCapabilities`], what `server/discover` announces.
//! - [`listen`]: helpers mapping lists onto the protocol's [`SubscriptionFilter`], and one
//!   acknowledged [`ListenStream`].
//! - [`listener`]: [`Listener`], a listen stream that reconnects with backoff.
//! - [`snapshot`]: [`Snapshot`], a list read completely at one revision, checked by
//!   [`validate`] before it may replace the previous one.
//! - [`rediscovery`]: [`Rediscovery`], the per-list state machine (single-flight, one dirty
//!   re-run, keep the snapshot on failure).
//! - [`watcher`]: [`CatalogWatcher`], the task driving it all; [`Observer`] sees each step,
//!   [`RefreshHandle`] asks for a re-read, [`VerifyPolicy`] bounds periodic verification.
//! - [`state`]: [`CatalogState`], what a host sees of a list (fresh, refreshing, stale,
//!   unavailable; revision, fetched at, reason).
//! - [`backoff`]: [`ReconnectPolicy`]; [`error`]: [`ClientError`] and its [`ErrorClass`];
//!   [`list`]: the protocol's [`ListKind`] plus host-side names.
//!
//! `examples/watch.rs` is a whole host: `cargo run -p mcp-fleet-client --example watch -- URL
//! [--list tools]` prints one [`CatalogState`] line per state change.
//!
//! ```no_run
//! use mcp_fleet_client::{Endpoint, ListKind, RpcClient, Transport, fetch_snapshot, FetchOptions};
//! # async fn run() -> Result<(), mcp_fleet_client::ClientError> {
//! let rpc = RpcClient::new(Transport::h2c(), Endpoint::parse("http://127.0.0.1:8080/mcp")?);
//! let report = fetch_snapshot(&rpc, ListKind::Tools, FetchOptions::default()).await;
//! let tools = report.outcome?;
//! println!("{} tools at revision {}", tools.items.len(), tools.revision.value);
//! # Ok(())
//! # }
//! ```

pub mod backoff;
pub mod capabilities;
pub mod endpoint;
pub mod error;
pub mod list;
pub mod listen;
pub mod listener;
pub mod message;
pub mod rediscovery;
pub mod rpc;
pub mod session;
pub mod snapshot;
pub mod sse;
pub mod state;
pub mod transport;
pub mod validate;
pub mod watcher;

pub use backoff::ReconnectPolicy;
pub use capabilities::ServerCapabilities;
pub use endpoint::Endpoint;
pub use error::{ClientError, ErrorClass};
pub use list::ListKind;
pub use listen::ListenStream;
pub use listener::{ListenEvent, Listener, ListenerOptions};
pub use mcp_fleet_protocol::SubscriptionFilter;
pub use message::{EventStamp, ListenMessage, Notification, Target};
pub use rediscovery::{Action, Rediscovery};
pub use rpc::RpcClient;
pub use snapshot::{FetchOptions, FetchReport, RequestTiming, Revision, RevisionSource, Snapshot, fetch_snapshot};
pub use sse::SseReader;
pub use state::{CatalogState, Freshness};
pub use transport::{SharedH2, Transport};
pub use watcher::{
    CatalogWatcher, NoObserver, Observer, RefreshHandle, ResourceReceiver, SnapshotReceiver, StateReceiver,
    VerifyPolicy, WatcherOptions,
};
