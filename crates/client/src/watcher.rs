//! [`CatalogWatcher`]: the task that keeps a host's list snapshots fresh the way MCP's
//! capability-rediscovery guidance asks — capabilities first, notifications as hints, and
//! verification that does not depend on them — all owned by a single task.
//!
//! - **Capabilities first.** `server/discover` says which lists announce their changes; only
//!   those are followed on the listen stream, and a list the acknowledgement does not honour
//!   (LSTN-4) is polled instead of waited for. No list announced: no listen stream at all.
//!   Capabilities are re-read after the discover result's `ttlMs` (bounded) and on every
//!   reconnect; when what is announced changes, the listen stream is reopened to match.
//! - **Refresh without notifications.** A [`RefreshHandle`] re-reads on demand; every list is
//!   re-verified periodically ([`VerifyPolicy`]: the server's `ttlMs`, bounded below and
//!   above); a reconnect re-reads everything and cancels reads begun on the old connection.
//! - **Errors by class** ([`ErrorClass`](crate::ErrorClass)): 401/403 stops the watcher and surfaces
//!   `unauthorized`; `-32601` changes mode (listen → poll; an unreadable list is given up);
//!   everything else keeps the snapshot and retries with backoff.
//! - **Staleness a host can see.** Each list's [`CatalogState`](crate::CatalogState) is on a `watch` channel
//!   ([`CatalogWatcher::states`]), published only when freshness, revision or reason changed.
//! - Subscribed resources ([`CatalogWatcher::resource`]) are re-read on
//!   `notifications/resources/updated`, one read in flight per URI (single-flight with one
//!   dirty re-run, the list machine reused); bursts of `list_changed` can be debounced.
//!
//! The per-list logic is [`Rediscovery`](crate::rediscovery::Rediscovery)'s; this module is the driver that does the I/O.

mod discovery;
mod events;
mod handles;
mod lists;
mod observer;
mod options;
mod resources;
mod run;
mod work;

pub use self::handles::{RefreshHandle, ResourceReceiver, SnapshotReceiver, StateReceiver};
pub use self::observer::{NoObserver, Observer};
pub use self::options::{VerifyPolicy, WatcherOptions};
pub use self::run::{CatalogWatcher, UNAUTHORIZED};
