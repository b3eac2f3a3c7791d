//! Everything a handler can be told, each with a production default, set by chaining
//! (`HandlerOptions::default().bus(bus).page_size(50)`) and checked once by
//! [`create_mcp_handler`](crate::create_mcp_handler).
//!
//! - `handler`: `HandlerOptions` itself (at the crate root), its defaults, the bus, identity, catalog and
//!   protocol settings, and the check at start; [`ResponseMode`].
//! - `listen`, `access`, `transport`: its setters for the listen path's limits, for who may
//!   call, and for the connections.
//! - `era2025`: [`Era2025Options`], how 2025-era clients are served.

mod access;
mod era2025;
pub(crate) mod handler;
mod listen;
mod transport;

pub use era2025::Era2025Options;
pub(crate) use handler::HandlerOptions;
pub use handler::ResponseMode;
