//! The events extension (experimental, cargo feature `events`): a server declares event types,
//! any node emits occurrences through the bus, and clients read them by `events/poll` on any
//! replica.
//!
//! - [`EventType`] (this file): one declared type — its name, its subscription arguments and
//!   payload (typed: schemas derived, arguments checked), and the `match` / `transform` hooks.
//! - [`Events`]: the declared types and the limits, given to
//!   [`HandlerOptions::events`](crate::HandlerOptions::events).
//! - `log`: the occurrences this node heard from the bus, bounded, with the floor below which
//!   it is incomplete.
//! - `cursor`: cursors — positions in the bus's history, sealed per principal and event type.
//! - `poll`: one `events/poll`, against the log (and the runtime both modes share).
//! - `push`: one `events/stream`, the same reads as notifications on an SSE response.
//! - [`Emitter`] (`emit`): `handler.events().emit(name, payload)`.
//! - `hooks`: `on_subscribe` / `on_unsubscribe`, once across the fleet per subscription key.
//! - `webhook`: `events/subscribe` — [`Webhooks`], subscriptions in the fleet's keyspace,
//!   each occurrence delivered once per subscription across the fleet, signed, to checked
//!   addresses only.
//!
//! **Across the fleet.** An occurrence travels the bus like a change notification: every node
//! hears it at the same `(epoch, version)` and keeps it in its log. A cursor names that
//! position, so a poll on any replica resumes where a poll on another left off; a replica whose
//! log does not reach back that far (it started later, it lost events to a gap, the history
//! rolled over) answers from what it has with `truncated: true`. On a bus split into shards,
//! occurrences all travel on the first shard and keep its positions, so cursors resume on any
//! replica there too.
//!
//! The design followed is the working group's sketch (`docs/design-sketch-proposal.md` of
//! `modelcontextprotocol/experimental-ext-triggers-events`, its latest revision: one
//! subscription per request, `arguments`, the general error codes, Standard Webhooks
//! signatures). Every type offers `poll` and `push`, and `webhook` when [`Events::webhooks`]
//! is set.

mod cursor;
mod emit;
pub(crate) mod hooks;
pub(crate) mod log;
pub(crate) mod poll;
pub(crate) mod push;
pub(crate) mod webhook;

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_fleet_protocol::types::{EventDescriptor, EventOccurrence};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::RequestContext;

pub use emit::{EmitError, Emitter};
pub use hooks::{Subscription, SubscriptionHook};
pub use webhook::{
    DEFAULT_MAX_PER_PRINCIPAL, DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_TTL, DEFAULT_MIN_TTL, DEFAULT_TTL, Network,
    NetworkParseError, Resolver, Webhooks,
};

/// The id the extension is advertised under in `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/events";

/// The `_meta` key naming a push stream's subscription (its request id) on each notification.
pub const SUBSCRIPTION_META: &str = "io.modelcontextprotocol/subscriptionId";

/// The extension as discover advertises it: `{"delivery": ["poll", "push"]}` (and
/// `"webhook"` when `webhooks` is on), the modes this server serves (the design's
/// `listChanged` is false: the declared types are fixed at build time).
pub(crate) fn extension(webhooks: bool) -> crate::extensions::Extension {
    let delivery: &[&str] = if webhooks { &["poll", "push", "webhook"] } else { &["poll", "push"] };
    let settings = serde_json::json!({"listChanged": false, "delivery": delivery});
    crate::extensions::Extension::new(EXTENSION_ID, settings)
        .unwrap_or_else(|e| unreachable!("the events extension's id is well-formed: {e}"))
}

/// Default occurrences a node remembers for polls ([`Events::history`]).
pub const DEFAULT_HISTORY: usize = 10_000;
/// Default most occurrences one poll returns ([`Events::max_events`]).
pub const DEFAULT_MAX_EVENTS: usize = 100;
/// Default longest long poll ([`Events::max_poll_wait`]).
pub const DEFAULT_MAX_POLL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// Default `nextPollMs` ([`Events::next_poll`]).
pub const DEFAULT_NEXT_POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// Default interval of a push stream's heartbeats ([`Events::heartbeat`]).
pub const DEFAULT_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);
/// Default most push streams open on a node ([`Events::max_streams`]).
pub const DEFAULT_MAX_STREAMS: usize = 10_000;
/// Default largest payload an emit accepts, encoded ([`Events::max_payload_bytes`]).
pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// Default lease of a poll subscription for the lifecycle hooks ([`Events::poll_lease`]).
pub const DEFAULT_POLL_LEASE: std::time::Duration = std::time::Duration::from_secs(120);
/// Default interval of the hooks' runner checks ([`Events::hooks_every`]).
pub const DEFAULT_HOOKS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Decides whether a subscription (its caller and arguments) receives an occurrence.
type Matcher = Arc<dyn Fn(&RequestContext, &EventOccurrence, &Map<String, Value>) -> bool + Send + Sync>;
/// Rewrites an occurrence for one subscription.
type Transform = Arc<dyn Fn(&RequestContext, EventOccurrence, &Map<String, Value>) -> EventOccurrence + Send + Sync>;
/// Checks a subscription's arguments.
type ArgumentCheck = Arc<dyn Fn(&Map<String, Value>) -> Result<(), String> + Send + Sync>;

/// One declared event type.
///
/// ```
/// use mcp_fleet_server::events::EventType;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct OrderFilter {
///     /// Only orders above this total.
///     min_total: Option<u64>,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct OrderCreated {
///     id: String,
///     total: u64,
/// }
///
/// let orders = EventType::new::<OrderFilter, OrderCreated>("order.created", "An order was placed")
///     .matching(|_ctx, occurrence, arguments| {
///         let min = arguments.get("min_total").and_then(|m| m.as_u64()).unwrap_or(0);
///         occurrence.data["total"].as_u64().is_some_and(|total| total >= min)
///     });
/// assert_eq!(orders.descriptor().input_schema["properties"]["min_total"]["description"], "Only orders above this total.");
/// ```
#[derive(Clone)]
pub struct EventType {
    descriptor: EventDescriptor,
    check_arguments: ArgumentCheck,
    matcher: Option<Matcher>,
    transform: Option<Transform>,
    pub(crate) on_subscribe: Option<SubscriptionHook>,
    pub(crate) on_unsubscribe: Option<SubscriptionHook>,
}

impl EventType {
    /// A type whose subscriptions take arguments `A` and whose occurrences carry `P`: both
    /// schemas derived, and a subscription's arguments checked by deserializing them as `A`.
    pub fn new<A, P>(name: impl Into<String>, description: impl Into<String>) -> EventType
    where
        A: JsonSchema + DeserializeOwned + 'static,
        P: JsonSchema + 'static,
    {
        let descriptor = EventDescriptor::new(name, description, crate::typed::schema_of::<P>());
        let descriptor = EventDescriptor { input_schema: crate::typed::schema_of::<A>(), ..descriptor };
        let check_arguments: ArgumentCheck = Arc::new(|arguments: &Map<String, Value>| {
            serde_json::from_value::<A>(Value::Object(arguments.clone())).map(drop).map_err(|e| e.to_string())
        });
        EventType {
            descriptor,
            check_arguments,
            matcher: None,
            transform: None,
            on_subscribe: None,
            on_unsubscribe: None,
        }
    }

    /// A type described by hand-written schemas (a dynamic catalog); arguments are not checked.
    pub fn untyped(descriptor: EventDescriptor) -> EventType {
        EventType {
            descriptor,
            check_arguments: Arc::new(|_| Ok(())),
            matcher: None,
            transform: None,
            on_subscribe: None,
            on_unsubscribe: None,
        }
    }

    /// Deliver an occurrence to a subscription only when `matcher` says so (the caller's
    /// context, the occurrence, the subscription's arguments). Without one, every
    /// subscription of the caller's tenant receives every occurrence.
    pub fn matching(
        mut self,
        matcher: impl Fn(&RequestContext, &EventOccurrence, &Map<String, Value>) -> bool + Send + Sync + 'static,
    ) -> EventType {
        self.matcher = Some(Arc::new(matcher));
        self
    }

    /// Rewrite each occurrence for the subscription receiving it (redact, reshape).
    pub fn transform(
        mut self,
        transform: impl Fn(&RequestContext, EventOccurrence, &Map<String, Value>) -> EventOccurrence + Send + Sync + 'static,
    ) -> EventType {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Call `hook` when a subscription key — `(principal, name, arguments)` — gains its first
    /// holder anywhere in the fleet (a poll, a push stream, a webhook subscription): once
    /// while anyone holds it, to start an upstream watch. It may run again after the replica
    /// running it died, so make it idempotent.
    ///
    /// ```
    /// use mcp_fleet_server::events::EventType;
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Channel { channel: String }
    /// # #[derive(serde::Serialize, schemars::JsonSchema)] struct Message { text: String }
    /// let messages = EventType::new::<Channel, Message>("chat.message", "A message in a channel")
    ///     .on_subscribe(|sub| async move { println!("join {:?}", sub.arguments["channel"]) })
    ///     .on_unsubscribe(|sub| async move { println!("leave {:?}", sub.arguments["channel"]) });
    /// # drop(messages);
    /// ```
    pub fn on_subscribe<F, Fut>(mut self, hook: F) -> EventType
    where
        F: Fn(Subscription) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_subscribe = Some(Arc::new(move |sub| Box::pin(hook(sub))));
        self
    }

    /// Call `hook` when the key's last holder is gone (a stream closed, a webhook removed or
    /// expired, polls stopped for [`Events::poll_lease`]), after [`on_subscribe`](Self::on_subscribe).
    pub fn on_unsubscribe<F, Fut>(mut self, hook: F) -> EventType
    where
        F: Fn(Subscription) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.on_unsubscribe = Some(Arc::new(move |sub| Box::pin(hook(sub))));
        self
    }

    /// Whether it has lifecycle hooks.
    pub(crate) fn has_hooks(&self) -> bool {
        self.on_subscribe.is_some() || self.on_unsubscribe.is_some()
    }

    /// What `events/list` shows of it.
    pub fn descriptor(&self) -> &EventDescriptor {
        &self.descriptor
    }

    /// Whether `arguments` are valid for a subscription (the error says why not).
    pub(crate) fn check(&self, arguments: &Map<String, Value>) -> Result<(), String> {
        (self.check_arguments)(arguments)
    }

    /// `occurrence` as the subscription (`ctx`, `arguments`) receives it, or `None`.
    pub(crate) fn deliver(
        &self,
        ctx: &RequestContext,
        occurrence: &EventOccurrence,
        arguments: &Map<String, Value>,
    ) -> Option<EventOccurrence> {
        if self.matcher.as_ref().is_some_and(|matches| !matches(ctx, occurrence, arguments)) {
            return None;
        }
        let occurrence = occurrence.clone();
        Some(match &self.transform {
            Some(transform) => transform(ctx, occurrence, arguments),
            None => occurrence,
        })
    }
}

impl std::fmt::Debug for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventType").field("descriptor", &self.descriptor).finish_non_exhaustive()
    }
}

/// The declared event types and the extension's limits.
///
/// ```
/// use mcp_fleet_server::events::{EventType, Events};
/// use mcp_fleet_server::HandlerOptions;
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct NoArguments {}
/// # #[derive(serde::Serialize, schemars::JsonSchema)] struct Deployed { version: String }
/// let events = Events::new()
///     .event(EventType::new::<NoArguments, Deployed>("deploy.finished", "A deploy finished"))
///     .history(50_000);
/// let options = HandlerOptions::default().events(events);
/// # drop(options);
/// ```
#[derive(Debug, Clone)]
pub struct Events {
    pub(crate) types: BTreeMap<String, EventType>,
    pub(crate) history: usize,
    pub(crate) max_events: usize,
    pub(crate) max_poll_wait: std::time::Duration,
    pub(crate) next_poll: std::time::Duration,
    pub(crate) max_payload_bytes: usize,
    pub(crate) heartbeat: std::time::Duration,
    pub(crate) max_streams: usize,
    pub(crate) webhooks: Option<Webhooks>,
    pub(crate) poll_lease: std::time::Duration,
    pub(crate) hooks_every: std::time::Duration,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            types: BTreeMap::new(),
            history: DEFAULT_HISTORY,
            max_events: DEFAULT_MAX_EVENTS,
            max_poll_wait: DEFAULT_MAX_POLL_WAIT,
            next_poll: DEFAULT_NEXT_POLL,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            heartbeat: DEFAULT_HEARTBEAT,
            max_streams: DEFAULT_MAX_STREAMS,
            webhooks: None,
            poll_lease: DEFAULT_POLL_LEASE,
            hooks_every: DEFAULT_HOOKS_EVERY,
        }
    }
}

impl Events {
    /// No event types, every limit at its default.
    pub fn new() -> Events {
        Events::default()
    }

    /// Declare `event` (replacing a type of the same name).
    pub fn event(mut self, event: EventType) -> Events {
        self.types.insert(event.descriptor.name.clone(), event);
        self
    }

    /// Occurrences each node remembers for polls (default [`DEFAULT_HISTORY`], at least 1): a
    /// cursor older than the oldest one is answered with `truncated: true`.
    pub fn history(mut self, occurrences: usize) -> Events {
        self.history = occurrences.max(1);
        self
    }

    /// Most occurrences one poll returns, whatever `maxEvents` asks (default
    /// [`DEFAULT_MAX_EVENTS`], at least 1).
    pub fn max_events(mut self, max: usize) -> Events {
        self.max_events = max.max(1);
        self
    }

    /// Longest a poll waits for an occurrence, whatever `timeoutMs` asks (default
    /// [`DEFAULT_MAX_POLL_WAIT`]).
    pub fn max_poll_wait(mut self, wait: std::time::Duration) -> Events {
        self.max_poll_wait = wait;
        self
    }

    /// The `nextPollMs` a poll answers (default [`DEFAULT_NEXT_POLL`]).
    pub fn next_poll(mut self, wait: std::time::Duration) -> Events {
        self.next_poll = wait;
        self
    }

    /// Largest payload an emit accepts, as JSON (default [`DEFAULT_MAX_PAYLOAD_BYTES`]).
    pub fn max_payload_bytes(mut self, bytes: usize) -> Events {
        self.max_payload_bytes = bytes;
        self
    }

    /// How often a push stream with nothing to send sends a heartbeat with its cursor (default
    /// [`DEFAULT_HEARTBEAT`]; the design asks for at least every 30 s; at least 10 ms).
    pub fn heartbeat(mut self, every: std::time::Duration) -> Events {
        self.heartbeat = every.max(std::time::Duration::from_millis(10));
        self
    }

    /// Most `events/stream` responses open on a node at once (default [`DEFAULT_MAX_STREAMS`]);
    /// one more is refused with `-32013`. A principal's streams also count against its stream
    /// quota, as listen streams do.
    pub fn max_streams(mut self, max: usize) -> Events {
        self.max_streams = max;
        self
    }

    /// Deliver by webhook too (`events/subscribe`): every declared type then lists
    /// `"webhook"` among its modes. Subscriptions live in the bus's keyspace, so the bus must
    /// have one (Redis, NATS JetStream, memory).
    pub fn webhooks(mut self, webhooks: Webhooks) -> Events {
        self.webhooks = Some(webhooks);
        self
    }

    /// How long a poll holds its subscription key for the lifecycle hooks (default
    /// [`DEFAULT_POLL_LEASE`]): polls have no goodbye, so `on_unsubscribe` runs when no poll
    /// renewed the key for this long. Keep it a few times the clients' poll interval.
    pub fn poll_lease(mut self, lease: std::time::Duration) -> Events {
        self.poll_lease = lease.max(std::time::Duration::from_millis(1));
        self
    }

    /// How often the replica running a key's hooks checks that someone still holds it
    /// (default [`DEFAULT_HOOKS_EVERY`]); its claim lasts three times this, so another
    /// replica takes over that long after it died.
    pub fn hooks_every(mut self, every: std::time::Duration) -> Events {
        self.hooks_every = every.max(std::time::Duration::from_millis(10));
        self
    }

    /// The declared type `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&EventType> {
        self.types.get(name)
    }
}
