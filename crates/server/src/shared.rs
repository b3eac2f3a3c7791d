//! [`HandlerShared`]: what one handler's requests and background tasks share. The endpoint
//! builds it once (`create_mcp_handler`) and wraps it in the public `McpHandler`; the HTTP side
//! (`http`), a layer below the endpoint, answers requests with it. Also here: how long a cut
//! call's answer still gets after the drain's deadline ([`ANSWER_GRACE`]), which both the
//! drain and the serve loops apply.

use std::sync::Arc;
use std::time::Duration;

use mcp_fleet_bus::ServerEventBus;
use tokio::sync::watch;

use crate::era2025::Era2025State;
use crate::factory::ServerFactory;
use crate::fleet::FleetWatch;
use crate::listen::{BusHealth, EventIntake};
use crate::notify::Notifier;
use crate::services::Services;

/// How long after the deadline the serve loops still let cut calls' answers reach their
/// clients before aborting the connections left.
pub(crate) const ANSWER_GRACE: Duration = Duration::from_millis(500);

/// Shared state of one handler: the [`Services`] every request may use (reached through
/// `Deref`), and what only the endpoint and the 2025 era use beside them.
pub(crate) struct HandlerShared {
    pub(crate) services: Services,
    pub(crate) factory: Box<dyn ServerFactory>,
    pub(crate) bus: Arc<dyn ServerEventBus>,
    pub(crate) notifier: Notifier,
    pub(crate) fleet: Arc<FleetWatch>,
    /// The door every change event goes through to this node's streams.
    pub(crate) intake: Arc<EventIntake>,
    /// The 2025 era: sessions in the fleet, GET streams, relayed answers.
    pub(crate) era2025: Era2025State,
    pub(crate) health: Arc<BusHealth>,
    /// `Bearer resource_metadata="…"`, the prefix of this endpoint's challenges, when it is a
    /// protected resource.
    pub(crate) challenge_base: Option<String>,
    /// Number of running serve loops; `shutdown()` waits for it to reach zero.
    pub(crate) serving: watch::Sender<usize>,
    /// The tasks whose last act must be done before `shutdown()` returns — the fleet's leave
    /// and the outbox's final round — else they die with the runtime, and the others wait
    /// for this node's membership to expire. Taken (once) by `shutdown()`.
    pub(crate) farewells: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::ops::Deref for HandlerShared {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
