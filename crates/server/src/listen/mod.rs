//! The `subscriptions/listen` path: the router that indexes open streams and turns bus events
//! into notifications, the per-stream pending set, and the SSE body that writes it.

mod pending;
mod router;
mod stream;
mod subscription;

pub use router::ListenLimits;
pub use stream::ListenBody;

pub(crate) use router::ListenRouter;
