//! How changes reach every listen stream in the fleet. There are two paths:
//!
//! - **Explicit** — `handler.notify().tools_changed()` and friends ([`Notifier`]): one event
//!   published on the bus; every node (this one included) receives it and its listen router
//!   delivers it. The future resolves once the bus accepted the event, or fails with the bus
//!   error: the caller sees the failure and may retry.
//! - **Catalog-driven** — registrations, [`EntryHandle`](crate::catalog::EntryHandle) operations,
//!   [`McpServer::batch`](crate::McpServer::batch), a reloaded catalog file. How they reach
//!   streams is the handler's [`CatalogAnnouncePolicy`](crate::fleet::CatalogAnnouncePolicy):
//!   - `FleetConverged` (the default): the node announces its new revisions in the fleet's
//!     membership ([`crate::fleet`]); every node tells its streams once, when every live node
//!     serves the new revision (or a timeout passed). Clients re-list once, and whichever
//!     replica answers serves the new catalog.
//!   - `Immediate`: the change is delivered to this node's streams at once and put in the
//!     `outbox`, which publishes it on the bus, retrying with backoff until the bus accepts it
//!     (coalesced per kind, scope and URI, bounded). The catalog is already live, so nobody —
//!     here or on other nodes — may stay unaware of it because the bus blinked; the bus's copy
//!     of the event is recognised here as a duplicate.

mod notifier;
mod outbox;

pub use notifier::Notifier;

pub(crate) use notifier::NotifierCore;
pub(crate) use outbox::Outbox;
