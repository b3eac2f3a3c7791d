//! [`FleetWatch`]: this node's part in the fleet's membership — the catalogs it serves, its
//! announcement (a heartbeat, and at once after a catalog change), its view of every member,
//! and the convergence of each (scope, list), which decides when its listen streams hear of a
//! catalog change (see [`super::convergence`]).
//!
//! One task ([`FleetWatch::run`]) does the I/O: every poll it reads the members (a membership
//! read that fails keeps the last view, whose members then expire on this node's clock — a
//! node cut off from the bus ends up alone, and announces its own changes), every heartbeat
//! (or when woken by a change) it announces, and on shutdown it leaves, so the others need not
//! wait for its TTL.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcp_fleet_bus::{Change, EventEnvelope, Member, ServerEventBus};
use mcp_fleet_protocol::ListKind;
use mcp_fleet_protocol::cursor::revision_hex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::convergence::{Convergence, Decision, Revision};
use super::record::list_event;
use super::record::{CatalogRevisions, GLOBAL_SCOPE, MemberRecord};
use super::status::{BuildCount, FleetMember, FleetStatus, ListConvergence};
use crate::identity::{ExecutionIdentity, RevisionSalt};
use crate::listen::{EventIntake, ListenRouter};
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// How catalog changes reach listen streams (see `notify` in the crate doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CatalogAnnouncePolicy {
    /// Each stream hears of a new revision once, when every live node of the fleet serves it
    /// (or the convergence timeout passed). The default.
    #[default]
    FleetConverged,
    /// Each stream hears of a change at once: this node's directly, the fleet's through a bus
    /// event the outbox publishes (retrying until the bus accepts it).
    Immediate,
}

/// Timing of the membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FleetTiming {
    /// A member silent for this long has left.
    pub(crate) ttl: Duration,
    /// A split longer than this is announced anyway.
    pub(crate) convergence_timeout: Duration,
}

impl FleetTiming {
    /// How often this node announces itself.
    pub(crate) fn heartbeat(&self) -> Duration {
        self.ttl / 5
    }

    /// How often it reads the members.
    fn poll(&self) -> Duration {
        (self.ttl / 20).clamp(Duration::from_millis(100), Duration::from_secs(1))
    }
}

/// A member as last read: its record and when it expires on this node's clock.
#[derive(Debug, Clone)]
struct Seen {
    record: MemberRecord,
    expires_at: Instant,
}

/// What the task keeps between polls.
#[derive(Default)]
struct State {
    /// Node id → its last read record.
    members: HashMap<String, Seen>,
    /// (scope, list) → its convergence.
    convergence: HashMap<(String, ListKind), Convergence>,
}

/// A catalog as the fleet sees it: the content revision of each of its lists (indexed like
/// `ListKind::ALL`), `None` once it is gone. The catalog implements it, so this module names
/// nothing of the catalog's.
pub(crate) trait Catalogued: Send + Sync {
    fn revisions(&self) -> Option<[u64; 4]>;
}

/// See the module docs. Shared by the handler (status, registration) and its task.
pub(crate) struct FleetWatch {
    node_id: String,
    bus: Arc<dyn ServerEventBus>,
    mode: CatalogAnnouncePolicy,
    timing: FleetTiming,
    /// Scope → the catalog served in it. A std mutex: read or replaced, never across `.await`.
    catalogs: Mutex<BTreeMap<String, Box<dyn Catalogued>>>,
    state: Mutex<State>,
    /// A catalog changed: announce now and evaluate.
    changed: Notify,
    intake: Arc<EventIntake>,
    router: ListenRouter,
    metrics: Metrics,
    started: Instant,
    /// Which code this node runs, announced with its catalogs.
    identity: Arc<ExecutionIdentity>,
    /// Folded into the revisions this node announces (see [`FleetWatch::salted`]).
    salt: RevisionSalt,
}

impl FleetWatch {
    pub(crate) fn new(
        bus: Arc<dyn ServerEventBus>,
        mode: CatalogAnnouncePolicy,
        timing: FleetTiming,
        intake: Arc<EventIntake>,
        router: ListenRouter,
        metrics: Metrics,
        identity: Arc<ExecutionIdentity>,
    ) -> Self {
        FleetWatch {
            node_id: bus.node_id().to_owned(),
            bus,
            mode,
            timing,
            catalogs: Mutex::default(),
            state: Mutex::default(),
            changed: Notify::new(),
            intake,
            router,
            metrics,
            started: Instant::now(),
            identity,
            salt: RevisionSalt::default(),
        }
    }

    /// Announce the revisions with `salt` folded in, as this node's lists show them.
    pub(crate) fn salted(mut self, salt: RevisionSalt) -> Self {
        self.salt = salt;
        self
    }

    /// How catalog changes reach listen streams.
    pub(crate) fn mode(&self) -> CatalogAnnouncePolicy {
        self.mode
    }

    /// Serve `catalog` as the catalog of `scope` (`None`: global).
    pub(crate) fn register(&self, scope: Option<&str>, catalog: Box<dyn Catalogued>) {
        let scope = scope.unwrap_or(GLOBAL_SCOPE).to_owned();
        self.catalogs.lock().unwrap_or_else(PoisonError::into_inner).insert(scope, catalog);
        self.changed.notify_one();
    }

    /// A registered catalog changed: announce and evaluate now.
    pub(crate) fn catalog_changed(&self) {
        self.changed.notify_one();
    }

    /// Every live catalog's current revisions, by scope.
    pub(crate) fn own_catalogs(&self) -> BTreeMap<String, CatalogRevisions> {
        let mut catalogs = self.catalogs.lock().unwrap_or_else(PoisonError::into_inner);
        catalogs.retain(|_, catalog| catalog.revisions().is_some());
        catalogs
            .iter()
            .filter_map(|(scope, catalog)| {
                Some((scope.clone(), CatalogRevisions::of(self.salt.apply_all(catalog.revisions()?))))
            })
            .collect()
    }

    /// Announce, read and evaluate until `stop`; then leave.
    pub(crate) async fn run(self: Arc<Self>, mut stop: Shutdown) {
        let mut next_beat = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_beat {
                self.announce().await;
                next_beat = now + self.timing.heartbeat();
            }
            self.read_members().await;
            self.evaluate();
            tokio::select! {
                _ = tokio::time::sleep(self.timing.poll()) => {}
                _ = self.changed.notified() => next_beat = Instant::now(),
                _ = stop.recv() => break,
            }
        }
        if let Err(err) = self.bus.leave().await {
            tracing::warn!(error = %err, "could not leave the fleet's membership; the others will wait for its TTL");
        }
    }

    async fn announce(&self) {
        let record = MemberRecord {
            v: MemberRecord::FORMAT,
            catalogs: self.own_catalogs(),
            streams: self.router.open_streams(),
            identity: Some((*self.identity).clone()),
        };
        if let Err(err) = self.bus.announce(record.encode(), self.timing.ttl).await {
            tracing::warn!(error = %err, "could not announce this node to the fleet");
        }
    }

    async fn read_members(&self) {
        match self.bus.members().await {
            Ok(members) => self.replace_members(members),
            Err(err) => tracing::debug!(error = %err, "could not read the fleet's members; keeping the last view"),
        }
    }

    fn replace_members(&self, members: Vec<Member>) {
        let now = Instant::now();
        let seen = members
            .into_iter()
            .filter_map(|m| {
                let record = MemberRecord::parse(&m.payload)?;
                Some((m.node_id, Seen { record, expires_at: now + m.expires_in }))
            })
            .collect();
        self.lock().members = seen;
    }

    /// Run every (scope, list)'s convergence against the current view and act on decisions.
    fn evaluate(&self) {
        let now = Instant::now();
        let own = self.own_catalogs();
        // The first views may still be filling in (heartbeats not seen yet): a split is acted
        // on only after one heartbeat interval.
        let settled_at = self.started + self.timing.heartbeat();
        let mut decisions = Vec::new();
        {
            let mut state = self.lock();
            state.members.retain(|_, seen| seen.expires_at > now);
            // A scope whose catalog is gone (a tenant removed) has nothing left to converge.
            state.convergence.retain(|(scope, _), _| own.contains_key(scope));
            self.metrics.fleet_members.set(live_count(&state.members, &self.node_id) as i64);
            for (scope, revisions) in &own {
                for list in ListKind::ANNOUNCED {
                    let Some(mine) = revisions.announced(list) else { continue };
                    let view = view_of(&state.members, &self.node_id, scope, list, mine);
                    let key = (scope.clone(), list);
                    let convergence = state
                        .convergence
                        .entry(key)
                        .or_insert_with(|| Convergence::new(mine, settled_at, self.timing.convergence_timeout));
                    if let Some(decision) = convergence.observe(&view, &self.node_id, now) {
                        decisions.push((scope.clone(), list, decision));
                    }
                }
            }
        }
        if self.mode == CatalogAnnouncePolicy::FleetConverged {
            for (scope, list, decision) in decisions {
                self.act(&scope, list, decision);
            }
        }
    }

    /// Tell this node's streams of `scope` that `list` changed.
    fn act(&self, scope: &str, list: ListKind, Decision::Notify { revision, converged, laggards }: Decision) {
        if !converged {
            self.metrics.convergence_timeouts.inc();
            tracing::warn!(
                scope, list = list.result_key(), revision = %revision_hex(revision), ?laggards,
                "the fleet did not converge on one catalog revision in time; notifying listen streams anyway (again once it converges)"
            );
        }
        let scope = (scope != GLOBAL_SCOPE).then(|| scope.to_owned());
        let change = Change { scope, kind: list_event(list), uri: None, session: None };
        let event = EventEnvelope::new(change, &self.node_id);
        self.intake.deliver_catalog(&event, revision, converged);
    }

    /// The fleet as this node sees it.
    pub(crate) fn status(&self) -> FleetStatus {
        let now = Instant::now();
        let own = self.own_catalogs();
        let state = self.lock();
        let mut members: Vec<FleetMember> = state
            .members
            .iter()
            .filter(|(_, seen)| seen.expires_at > now)
            .map(|(node, seen)| {
                let expires_in = seen.expires_at.saturating_duration_since(now);
                FleetMember {
                    node_id: node.clone(),
                    catalogs: seen.record.catalogs.clone(),
                    open_streams: seen.record.streams,
                    identity: seen.record.identity.clone(),
                    // Its announcement was made a TTL before it expires.
                    last_seen_ms_ago: millis(self.timing.ttl.saturating_sub(expires_in)),
                    expires_in_ms: millis(expires_in),
                    is_self: *node == self.node_id,
                }
            })
            .collect();
        members.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        let lists = own
            .iter()
            .flat_map(|(scope, revisions)| ListKind::ANNOUNCED.map(|list| (scope, revisions, list)))
            .filter_map(|(scope, revisions, list)| {
                let mine = revisions.announced(list)?;
                let view = view_of(&state.members, &self.node_id, scope, list, mine);
                let convergence = state.convergence.get(&(scope.clone(), list));
                Some(ListConvergence {
                    scope: scope.clone(),
                    list: list.result_key(),
                    revision: revision_hex(mine),
                    converged: view.iter().all(|(_, r)| *r == mine),
                    split_for_secs: convergence.and_then(|c| c.split_for(now)).map(|d| d.as_secs_f64()),
                    differing: view.into_iter().filter(|(_, r)| *r != mine).map(|(n, _)| n).collect(),
                })
            })
            .collect();
        let builds = BuildCount::of(&members);
        FleetStatus { node_id: self.node_id.clone(), identity: (*self.identity).clone(), members, builds, lists }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is replaced or updated entry by entry; a panic cannot leave it torn.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The live members (this node counted once) that serve `scope`, with their revision of
/// `list`; this node's own current revision `mine` stands in for its announcement (which may
/// lag, or have failed to reach the bus).
fn view_of(
    members: &HashMap<String, Seen>,
    own_node: &str,
    scope: &str,
    list: ListKind,
    mine: Revision,
) -> Vec<(String, Revision)> {
    let mut view: Vec<(String, Revision)> = members
        .iter()
        .filter(|(node, _)| node.as_str() != own_node)
        .filter_map(|(node, seen)| Some((node.clone(), seen.record.catalogs.get(scope)?.announced(list)?)))
        .collect();
    view.push((own_node.to_owned(), mine));
    view
}

fn live_count(members: &HashMap<String, Seen>, own_node: &str) -> usize {
    members.keys().filter(|node| node.as_str() != own_node).count() + 1
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use crate::{HandlerOptions, McpServer, create_mcp_handler};

    fn scopes(watch: &super::FleetWatch) -> Vec<String> {
        let mut scopes: Vec<String> = watch.lock().convergence.keys().map(|(scope, _)| scope.clone()).collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }

    #[tokio::test]
    async fn the_convergence_of_a_scope_whose_catalog_is_gone_is_forgotten() {
        let handler =
            create_mcp_handler(McpServer::builder("g", "1").build(), HandlerOptions::default()).await.unwrap();
        let watch = &handler.shared.fleet;
        /// A catalog that lives as long as its `Arc`.
        struct Catalog(std::sync::Weak<()>);
        impl super::Catalogued for Catalog {
            fn revisions(&self) -> Option<[u64; 4]> {
                self.0.upgrade().map(|_| [1, 2, 3, 4])
            }
        }
        let tenant = std::sync::Arc::new(());
        watch.register(Some("tenant-1"), Box::new(Catalog(std::sync::Arc::downgrade(&tenant))));
        watch.evaluate();
        assert_eq!(scopes(watch), ["", "tenant-1"]);
        drop(tenant);
        watch.evaluate();
        assert_eq!(scopes(watch), [""], "no entry left for the removed scope");
    }
}
