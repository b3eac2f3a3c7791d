//! The `subscriptions/listen` path: the bus consumer and its supervisor, the intake that
//! deduplicates events, the router that indexes open streams and turns events into
//! notifications, the per-stream pending set, the SSE body that writes it (or, over HTTP/1.1,
//! the router itself, straight to the socket: `direct`, whose `DirectSocket` the 2025 GET stream
//! writes to as well), what the streams of a
//! scoped principal see of an event's place, and the health that decides whether streams are
//! accepted at all.

mod budget;
pub(crate) mod direct;
mod health;
mod intake;
mod interest;
pub(crate) mod keepalive;
mod limits;
pub(crate) mod monitor;
mod pending;
mod router;
mod stream;
mod subscription;
pub(crate) mod supervisor;
mod tenant;

pub use health::BusHealthState;
pub(crate) use stream::ListenBody;

pub(crate) use budget::Opener;
pub(crate) use direct::DirectSocket;
pub(crate) use health::BusHealth;
#[cfg(feature = "events")]
pub(crate) use intake::OccurrenceEvents;
pub(crate) use intake::{EventIntake, Listeners, SessionEvents, TaskEvents};
pub(crate) use interest::{FollowedUris, Interest, InterestGuard, InterestSink, UNFOLLOWABLE};
pub(crate) use limits::ListenLimits;
pub(crate) use router::ListenRouter;
pub(crate) use tenant::{Renderings, tenant_meta};

#[cfg(test)]
mod tests;
