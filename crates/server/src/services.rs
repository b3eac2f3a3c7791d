//! [`Services`]: what serving one request may use of its handler — options, metrics, the
//! listen router, the task store, the audit trail, limits, the `requestState` codec, the drain
//! signal — handed to the methods and the 2025 era as one narrow reference. The handler's
//! shared state (`endpoint`) holds it beside what only the endpoint uses (the factory, the
//! bus, the fleet, the 2025 sessions, the serve loops), so the methods never name the endpoint.

use std::sync::Arc;

use crate::audit::AuditTrail;
use crate::auth::LimitGate;
use crate::extensions::Extensions;
use crate::identity::{ExecutionIdentity, RevisionSalt};
use crate::listen::{Interest, ListenRouter};
use crate::metrics::Metrics;
use crate::options::HandlerOptions;
use crate::request_state::StateCodec;
use crate::shutdown::{CutNames, ShutdownTrigger};
use crate::tasks::Tasks;

/// See the module docs.
pub(crate) struct Services {
    pub(crate) options: HandlerOptions,
    pub(crate) router: ListenRouter,
    /// What the open streams follow, told to the bus (see `listen::Interest`).
    pub(crate) interest: Interest,
    /// The tasks extension (`None` when off, or without a keyspace).
    pub(crate) tasks: Option<Arc<Tasks>>,
    /// What discover advertises beside the server definition's extensions: the options',
    /// and the tasks extension when it is on.
    pub(crate) extensions: Extensions,
    pub(crate) metrics: Metrics,
    pub(crate) state_codec: Arc<StateCodec>,
    /// Which code answers (shown in discover, the membership record, `build_info`).
    pub(crate) identity: Arc<ExecutionIdentity>,
    /// What the tools revision folds in (`HandlerOptions::identity_in_tools_revision`).
    pub(crate) revision_salt: RevisionSalt,
    /// The epoch and node a call cut by the drain names (`endpoint::drain`).
    pub(crate) cut_names: Arc<CutNames>,
    /// The record of every call and task transition (off unless the options ask for it).
    pub(crate) audit: AuditTrail,
    /// Per-principal request rate and open-stream allowance.
    pub(crate) limits: LimitGate,
    /// The events extension, when the options declare it.
    #[cfg(feature = "events")]
    pub(crate) events: Option<Arc<crate::events::poll::EventsRuntime>>,
    /// Pulled once on shutdown; serve loops, background tasks and running calls listen to it
    /// (and stop as well when it is dropped with the last handler clone).
    pub(crate) shutdown: ShutdownTrigger,
}
