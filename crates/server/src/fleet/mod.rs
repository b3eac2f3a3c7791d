//! Fleet-consistent catalogs: every node announces the revisions of the catalogs it serves
//! (membership on the bus, with a heartbeat and a TTL), reads everyone's, and tells its listen
//! streams of a catalog change once — when every live node serves the new revision, or when a
//! timeout passes (then again at convergence).
//!
//! - `record`: what a node announces ([`CatalogRevisions`] per scope).
//! - `convergence`: the per-(scope, list) state machine deciding when to notify.
//! - `watch`: the task — announce, read, evaluate, leave — and the registry of catalogs.
//! - `status`: [`FleetStatus`], the view an operator reads.

mod convergence;
mod record;
mod status;
mod watch;

pub use record::CatalogRevisions;
pub use status::{BuildCount, FleetMember, FleetStatus, ListConvergence};
pub use watch::CatalogAnnouncePolicy;

pub(crate) use record::list_event;
pub(crate) use watch::{Catalogued, FleetTiming, FleetWatch};
