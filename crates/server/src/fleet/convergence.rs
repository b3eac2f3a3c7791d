//! [`Convergence`]: when to tell this node's listen streams that one list changed, so that
//! every stream hears of each new revision **once**, and only when every live node serves it.
//!
//! One state machine per (scope, list). Each membership poll feeds it the revisions the live
//! members announce for its key ([`Convergence::observe`]); it answers with at most one
//! [`Decision`]:
//!
//! - every member serves revision R and R differs from what the fleet was last known to serve
//!   (`announced`) → [`Decision::Notify`] with `converged: true`;
//! - the members disagree for longer than the timeout → one [`Decision::Notify`] with
//!   `converged: false` and the laggards (members not on the majority's revision), so nobody
//!   waits forever on a node that never catches up; when the fleet converges after that, it
//!   notifies once more, so no client stays on a re-list made during the split;
//! - the timeout is kept **per target revision**: while a laggard stays behind, each new
//!   revision the majority moves to is announced (`converged: false`) once it has been the
//!   majority's for the timeout. A stuck replica does not silence every later change.
//!
//! `announced` starts as this node's own revision: what its clients could have listed. During
//! a settle window after start (membership views may still be filling in), a split only matters
//! once the window is over: if the fleet is split then, `announced` becomes unknown, so the
//! eventual convergence is announced — a node started mid-rollout tells its clients when the
//! rollout is done.

use std::time::Duration;

use tokio::time::Instant;

/// A content revision (a 64-bit content hash of one list, or of resources and templates).
pub(crate) type Revision = u64;

/// What the state machine asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Tell this node's streams that the list changed.
    Notify {
        /// The revision the fleet now serves (converged), or the majority's (timed out).
        revision: Revision,
        /// Whether every live member serves it.
        converged: bool,
        /// Members not on `revision` (empty when converged).
        laggards: Vec<String>,
    },
}

/// The state of one (scope, list).
#[derive(Debug, Clone)]
pub(crate) struct Convergence {
    /// The revision the fleet was last known to serve (as told to this node's streams, or
    /// established at start); `None` when unknown.
    announced: Option<Revision>,
    /// Until then a split view is not acted on.
    settled_at: Instant,
    /// Since when the members disagree (`None` while they agree).
    split_since: Option<Instant>,
    /// The revision the majority serves in the current split, and since when; its timeout
    /// counts from then (or from the split's start, for the split's first target).
    target: Option<(Revision, Instant)>,
    /// The last revision announced with `converged: false` in the current split (`None`
    /// when none was): announced once per target, and once more at convergence.
    timed_out: Option<Revision>,
    timeout: Duration,
}

impl Convergence {
    /// A key whose own revision at start is `own`, settling until `settled_at`, timing out a
    /// split after `timeout`.
    pub(crate) fn new(own: Revision, settled_at: Instant, timeout: Duration) -> Self {
        Convergence { announced: Some(own), settled_at, split_since: None, target: None, timed_out: None, timeout }
    }

    /// Feed one view: `(node, revision)` of every live member that knows this key, this node
    /// included; `own` is this node's id.
    pub(crate) fn observe(&mut self, view: &[(String, Revision)], own: &str, now: Instant) -> Option<Decision> {
        let mut revisions: Vec<Revision> = view.iter().map(|(_, r)| *r).collect();
        revisions.sort_unstable();
        revisions.dedup();
        match revisions[..] {
            [] => None,
            [converged] => self.converged(converged),
            _ => self.split(view, own, now),
        }
    }

    /// Whether the members agree right now.
    #[cfg(test)]
    pub(crate) fn is_converged(&self) -> bool {
        self.split_since.is_none()
    }

    /// How long the members have disagreed.
    pub(crate) fn split_for(&self, now: Instant) -> Option<Duration> {
        self.split_since.map(|since| now.saturating_duration_since(since))
    }

    fn converged(&mut self, revision: Revision) -> Option<Decision> {
        self.split_since = None;
        self.target = None;
        let news = self.announced != Some(revision) || self.timed_out.is_some();
        self.announced = Some(revision);
        self.timed_out = None;
        news.then_some(Decision::Notify { revision, converged: true, laggards: Vec::new() })
    }

    fn split(&mut self, view: &[(String, Revision)], own: &str, now: Instant) -> Option<Decision> {
        if now < self.settled_at {
            return None;
        }
        let since = *self.split_since.get_or_insert_with(|| {
            // Split when the view settles (or later): what the clients saw is not known to be
            // what the fleet will serve; the convergence to come must be announced.
            self.announced = None;
            now
        });
        let target = majority(view, own);
        let target_since = match self.target {
            Some((revision, at)) if revision == target => at,
            // The split's first target counts from the split's start; a later one from when
            // the majority moved to it.
            _ => self.target.insert((target, if self.timed_out.is_some() { now } else { since })).1,
        };
        if self.timed_out == Some(target) || now.saturating_duration_since(target_since) < self.timeout {
            return None;
        }
        self.timed_out = Some(target);
        let laggards = view.iter().filter(|(_, r)| *r != target).map(|(node, _)| node.clone()).collect();
        Some(Decision::Notify { revision: target, converged: false, laggards })
    }
}

/// The revision most members serve; a tie goes to this node's own revision when it is among
/// the tied, else to the smallest (every node then picks the same).
fn majority(view: &[(String, Revision)], own: &str) -> Revision {
    let count = |r: Revision| view.iter().filter(|(_, x)| *x == r).count();
    let own_revision = view.iter().find(|(node, _)| node == own).map(|(_, r)| *r);
    let best = view.iter().map(|(_, r)| count(*r)).max().unwrap_or(0);
    let mut tied: Vec<Revision> = view.iter().map(|(_, r)| *r).filter(|r| count(*r) == best).collect();
    tied.sort_unstable();
    match own_revision {
        Some(r) if tied.contains(&r) => r,
        _ => tied.first().copied().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(60);

    fn view(entries: &[(&str, Revision)]) -> Vec<(String, Revision)> {
        entries.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect()
    }

    fn notify(revision: Revision, converged: bool, laggards: &[&str]) -> Option<Decision> {
        Some(Decision::Notify { revision, converged, laggards: laggards.iter().map(|s| (*s).to_owned()).collect() })
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_is_announced_once_when_the_last_node_serves_it() {
        let start = Instant::now();
        let mut c = Convergence::new(1, start, TIMEOUT);
        assert_eq!(c.observe(&view(&[("a", 1), ("b", 1), ("c", 1)]), "a", start), None, "nothing new");
        let t = start + Duration::from_secs(5);
        assert_eq!(c.observe(&view(&[("a", 2), ("b", 1), ("c", 1)]), "a", t), None);
        assert_eq!(c.observe(&view(&[("a", 2), ("b", 2), ("c", 1)]), "a", t + Duration::from_secs(1)), None);
        assert!(!c.is_converged());
        assert_eq!(
            c.observe(&view(&[("a", 2), ("b", 2), ("c", 2)]), "a", t + Duration::from_secs(2)),
            notify(2, true, &[])
        );
        assert_eq!(c.observe(&view(&[("a", 2), ("b", 2), ("c", 2)]), "a", t + Duration::from_secs(3)), None, "once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_split_past_the_timeout_is_announced_with_its_laggards_and_again_at_convergence() {
        let start = Instant::now();
        let mut c = Convergence::new(1, start, TIMEOUT);
        let split = view(&[("a", 2), ("b", 1), ("c", 2)]);
        assert_eq!(c.observe(&split, "b", start), None);
        assert_eq!(c.observe(&split, "b", start + Duration::from_secs(59)), None);
        assert_eq!(
            c.observe(&split, "b", start + Duration::from_secs(60)),
            notify(2, false, &["b"]),
            "the majority's, naming b"
        );
        assert_eq!(c.observe(&split, "b", start + Duration::from_secs(90)), None, "one timeout per split");
        let fixed = view(&[("a", 2), ("b", 2), ("c", 2)]);
        assert_eq!(c.observe(&fixed, "b", start + Duration::from_secs(100)), notify(2, true, &[]), "once more");
        assert_eq!(c.observe(&fixed, "b", start + Duration::from_secs(101)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stuck_laggard_does_not_silence_later_revisions() {
        let start = Instant::now();
        let mut c = Convergence::new(1, start, TIMEOUT);
        let second = view(&[("a", 2), ("b", 2), ("c", 1)]);
        assert_eq!(c.observe(&second, "a", start), None);
        assert_eq!(c.observe(&second, "a", start + TIMEOUT), notify(2, false, &["c"]));
        // Revision 3 lands on a and b; c is still stuck on 1.
        let third = view(&[("a", 3), ("b", 3), ("c", 1)]);
        let landed = start + TIMEOUT * 2;
        assert_eq!(c.observe(&third, "a", landed), None, "a new target waits for its own timeout");
        assert_eq!(c.observe(&third, "a", landed + TIMEOUT - Duration::from_secs(1)), None);
        assert_eq!(c.observe(&third, "a", landed + TIMEOUT), notify(3, false, &["c"]), "revision 3 is announced");
        assert_eq!(c.observe(&third, "a", landed + TIMEOUT * 2), None, "once per target");
        let fixed = view(&[("a", 3), ("b", 3), ("c", 3)]);
        assert_eq!(c.observe(&fixed, "a", landed + TIMEOUT * 3), notify(3, true, &[]), "and once more at convergence");
        assert_eq!(c.observe(&fixed, "a", landed + TIMEOUT * 4), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_timed_out_split_that_converges_back_is_announced_again() {
        let start = Instant::now();
        let mut c = Convergence::new(1, start, TIMEOUT);
        let split = view(&[("a", 1), ("d", 2)]);
        c.observe(&split, "a", start);
        assert!(matches!(c.observe(&split, "a", start + TIMEOUT), Some(Decision::Notify { converged: false, .. })));
        // d left: the fleet serves 1 again; clients that re-listed on d must re-list.
        assert_eq!(c.observe(&view(&[("a", 1)]), "a", start + TIMEOUT * 2), notify(1, true, &[]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_node_started_mid_rollout_announces_the_rollouts_end() {
        let start = Instant::now();
        let settled = start + Duration::from_secs(2);
        let mut d = Convergence::new(2, settled, TIMEOUT);
        // Before the view settles, nothing is decided (others may not be visible yet).
        assert_eq!(d.observe(&view(&[("d", 2)]), "d", start), None);
        let mixed = view(&[("a", 1), ("b", 1), ("d", 2)]);
        assert_eq!(d.observe(&mixed, "d", settled), None);
        assert_eq!(d.observe(&view(&[("b", 1), ("d", 2)]), "d", settled + Duration::from_secs(5)), None);
        assert_eq!(d.observe(&view(&[("d", 2)]), "d", settled + Duration::from_secs(10)), notify(2, true, &[]));
    }

    #[tokio::test(start_paused = true)]
    async fn changes_during_the_settle_window_are_still_announced() {
        let start = Instant::now();
        let mut c = Convergence::new(1, start + Duration::from_secs(2), TIMEOUT);
        assert_eq!(c.observe(&view(&[("a", 3)]), "a", start), notify(3, true, &[]), "a lone node's change");
    }

    #[test]
    fn the_majority_is_the_same_on_every_node_and_ties_prefer_the_own_revision() {
        let v = view(&[("a", 5), ("b", 5), ("c", 7)]);
        assert_eq!(majority(&v, "c"), 5);
        let tie = view(&[("a", 5), ("b", 7)]);
        assert_eq!(majority(&tie, "b"), 7);
        assert_eq!(majority(&tie, "z"), 5, "not a member: the smallest");
    }
}
