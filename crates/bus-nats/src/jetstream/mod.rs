//! JetStream mode: the stream (created and recreated on demand; its creation time is the
//! epoch), publishing with an acknowledged stream sequence as the version, and the
//! per-subscription task that reads the stream and watches it.
//!
//! - [`stream`]: locating the stream, creating it when missing, and its epoch.
//! - [`publish`]: publishing, recreating a deleted stream on the way.
//! - [`tail`]: the consumer task — resumption, gaps, stalls, lost streams; its decisions as
//!   pure functions in [`rules`].
//! - [`shards`]: the bus split into several streams, each with its publisher, read all or by
//!   interest.

mod publish;
mod rules;
mod shards;
mod stream;
mod tail;

pub(crate) use shards::{NatsReader, connect};
pub(crate) use stream::current;
pub(crate) use tail::subscribe;
