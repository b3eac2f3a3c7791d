//! [`Subject`]: what a node's open streams follow beyond the fleet-wide events, so a backend
//! that routes by interest (Redis split into shards with `routing=interest`) reads only what
//! some stream of the node needs. See [`ServerEventBus::gain`](crate::ServerEventBus::gain).
//!
//! Which events are **fleet-wide** — every node consumes them, whatever it follows — and which
//! are routed is [`Subject::routed_by`]'s answer: a change of one scope goes to that scope's
//! followers, an unscoped update of one resource to that URI's; a list change for everyone,
//! and every task record and session change (a node may be waiting on one without any stream
//! for it) and every event occurrence (any node may be polled for one, by a caller with no
//! stream open), to every node — except a session's (un)subscription, which goes with the updates
//! it is about: the session's streams must hear it before them, and only they need it.

use crate::envelope::{EventEnvelope, EventKind, SessionOp};

/// Something a stream follows that not every node needs.
///
/// ```
/// use mcp_fleet_bus::{Change, EventEnvelope, EventKind, Subject};
/// let scoped = EventEnvelope::new(Change::list(EventKind::ToolsListChanged).in_scope("t1"), "n");
/// assert_eq!(Subject::routed_by(&scoped), [Subject::Scope("t1".into())]);
/// let update = EventEnvelope::new(Change::resource("file:///a"), "n");
/// assert!(Subject::EveryUri.matches(&update) && Subject::Uri("file:///a".into()).matches(&update));
/// assert!(Subject::routed_by(&EventEnvelope::new(Change::list(EventKind::ToolsListChanged), "n")).is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    /// Every change of one scope (tenant).
    Scope(String),
    /// Unscoped updates of one resource.
    Uri(String),
    /// Unscoped updates of every resource (a stream whose URIs change while it is open, as a
    /// 2025 session's do).
    EveryUri,
}

impl Subject {
    /// The subjects an event is routed by: none for a fleet-wide event; one for most; a
    /// scoped session's (un)subscription is routed by its URI and its scope, as both kinds of
    /// update it is about are (a backend stores it once per place).
    pub fn routed_by(event: &EventEnvelope) -> Vec<Subject> {
        let scope = event.scope.as_ref().map(|s| Subject::Scope(s.clone()));
        match (event.kind, &event.uri) {
            (EventKind::SessionChanged, Some(uri)) if subscription_change(event) => {
                std::iter::once(Subject::Uri(uri.clone())).chain(scope).collect()
            }
            (EventKind::SessionChanged | EventKind::TaskChanged | EventKind::Occurred, _) => Vec::new(),
            (_, _) if scope.is_some() => scope.into_iter().collect(),
            (EventKind::ResourceUpdated, Some(uri)) => vec![Subject::Uri(uri.clone())],
            _ => Vec::new(),
        }
    }

    /// Whether following this subject takes `event` (fleet-wide events are taken by everyone).
    pub fn matches(&self, event: &EventEnvelope) -> bool {
        let routed = Subject::routed_by(event);
        routed.is_empty()
            || routed.iter().any(|r| r == self || (matches!(r, Subject::Uri(_)) && *self == Subject::EveryUri))
    }
}

fn subscription_change(event: &EventEnvelope) -> bool {
    event.session.as_ref().is_some_and(|s| matches!(s.op, SessionOp::Subscribe | SessionOp::Unsubscribe))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Change;

    fn event(change: Change) -> EventEnvelope {
        EventEnvelope::new(change, "n")
    }

    #[test]
    fn records_and_unscoped_lists_are_fleet_wide() {
        assert!(Subject::routed_by(&event(Change::list(EventKind::PromptsListChanged))).is_empty());
        assert!(Subject::routed_by(&event(Change::session("s", SessionOp::End, None))).is_empty());
        let scoped_session = Change::session("s", SessionOp::Answered, Some("7".into())).in_scope("t");
        assert!(Subject::routed_by(&event(scoped_session)).is_empty(), "a session's answer reaches every node");
        assert!(Subject::routed_by(&event(Change::task("t1").in_scope("t"))).is_empty(), "so does a task's record");
        let occurrence = EventEnvelope::occurrence("e", "{}".into(), Some("t".into()), "n");
        assert!(Subject::routed_by(&occurrence).is_empty(), "and a tenant's event occurrence: any node may be polled");
    }

    #[test]
    fn a_subscription_goes_with_the_updates_it_is_about() {
        let unscoped = event(Change::session("s", SessionOp::Subscribe, Some("u".into())));
        assert_eq!(Subject::routed_by(&unscoped), [Subject::Uri("u".into())]);
        assert!(Subject::EveryUri.matches(&unscoped), "a session's stream follows every URI");
        let scoped = event(Change::session("s", SessionOp::Unsubscribe, Some("u".into())).in_scope("t"));
        assert_eq!(Subject::routed_by(&scoped), [Subject::Uri("u".into()), Subject::Scope("t".into())]);
    }

    #[test]
    fn a_scoped_update_is_routed_by_its_scope_not_its_uri() {
        let e = event(Change::resource("u").in_scope("t"));
        assert!(Subject::Scope("t".into()).matches(&e));
        assert!(!Subject::Uri("u".into()).matches(&e));
        assert!(!Subject::EveryUri.matches(&e));
        assert!(!Subject::Scope("other".into()).matches(&event(Change::resource("u").in_scope("t"))));
    }
}
