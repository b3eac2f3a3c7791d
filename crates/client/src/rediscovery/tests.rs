//! Unit tests of the rediscovery state machine: single-flight, one dirty re-run, coverage,
//! keeping the snapshot on failure, retries and reconnects.

use super::{Action, Rediscovery};

type List = Rediscovery<&'static str>;

#[test]
fn first_change_fetches_and_installs() {
    let mut list = List::new();
    assert!(!list.is_stale());
    assert_eq!(list.on_change(), Action::Fetch { covers: 1 });
    assert!(list.is_fetching() && list.is_stale());
    assert_eq!(list.on_fetched(1, "v1"), Action::Idle);
    assert_eq!((list.snapshot(), list.covered(), list.is_stale()), (Some(&"v1"), 1, false));
}

#[test]
fn many_changes_during_a_fetch_collapse_into_one_rerun() {
    let mut list = List::new();
    assert_eq!(list.on_change(), Action::Fetch { covers: 1 });
    for _ in 0..5 {
        assert_eq!(list.on_change(), Action::Idle, "single-flight");
    }
    assert_eq!(list.on_fetched(1, "v1"), Action::Fetch { covers: 6 }, "exactly one re-run covering all");
    assert_eq!(list.snapshot(), Some(&"v1"), "the first fetch's snapshot is installed meanwhile");
    assert_eq!(list.on_fetched(6, "v6"), Action::Idle);
    assert_eq!((list.snapshot(), list.covered(), list.is_stale()), (Some(&"v6"), 6, false));
}

#[test]
fn a_failed_fetch_keeps_the_previous_snapshot_and_retries_with_growing_backoff() {
    let mut list = List::new();
    list.on_change();
    list.on_fetched(1, "v1");
    assert_eq!(list.on_change(), Action::Fetch { covers: 2 });
    assert_eq!(list.on_fetch_failed(2), Action::Retry { failures: 1, token: 1 });
    assert_eq!((list.snapshot(), list.is_stale()), (Some(&"v1"), true));
    assert_eq!(list.on_retry_due(1), Action::Fetch { covers: 2 });
    assert_eq!(list.on_fetch_failed(2), Action::Retry { failures: 2, token: 2 });
    assert_eq!(list.on_retry_due(1), Action::Idle, "a stale token does nothing");
    assert_eq!(list.on_retry_due(2), Action::Fetch { covers: 2 });
    assert_eq!(list.on_fetched(2, "v2"), Action::Idle);
    assert_eq!((list.snapshot(), list.failures()), (Some(&"v2"), 0));
}

#[test]
fn a_change_during_backoff_fetches_at_once_and_cancels_the_retry() {
    let mut list = List::new();
    list.on_change();
    let Action::Retry { token, .. } = list.on_fetch_failed(1) else { panic!("retry expected") };
    assert_eq!(list.snapshot(), None);
    assert_eq!(list.on_change(), Action::Fetch { covers: 2 });
    assert_eq!(list.on_retry_due(token), Action::Idle, "the pending retry is void");
}

#[test]
fn a_failure_with_a_dirty_mark_reruns_immediately() {
    let mut list = List::new();
    list.on_change();
    list.on_change();
    assert_eq!(list.on_fetch_failed(1), Action::Fetch { covers: 2 });
    assert_eq!(list.on_fetched(2, "v2"), Action::Idle);
    assert!(!list.is_stale());
}

#[test]
fn results_of_fetches_not_in_flight_are_ignored() {
    let mut list = List::new();
    list.on_change();
    assert_eq!(list.on_fetched(7, "bogus"), Action::Idle);
    assert_eq!(list.on_fetch_failed(7), Action::Idle);
    assert_eq!(list.snapshot(), None);
    assert!(list.is_fetching());
}

#[test]
fn a_reconnect_is_heard_like_a_change() {
    // The driver calls on_change on (re)connect: notifications sent while away are lost.
    let mut list = List::new();
    assert_eq!(list.on_change(), Action::Fetch { covers: 1 }); // connected
    list.on_fetched(1, "v1");
    assert_eq!(list.on_change(), Action::Fetch { covers: 2 }); // reconnected
    list.on_fetched(2, "v2");
    assert_eq!(list.covered(), 2);
}

#[test]
fn a_restart_replaces_the_running_fetch_and_ignores_its_result() {
    let mut list = List::new();
    list.on_change();
    list.on_fetched(1, "v1");
    assert_eq!(list.on_change(), Action::Fetch { covers: 2 }); // begun on the old connection
    assert_eq!(list.restart(), Action::Fetch { covers: 3 }); // reconnected
    assert_eq!(list.on_fetched(2, "old"), Action::Idle, "the cancelled fetch is ignored");
    assert_eq!(list.snapshot(), Some(&"v1"));
    assert_eq!(list.on_fetched(3, "v3"), Action::Idle);
    assert_eq!((list.snapshot(), list.is_stale()), (Some(&"v3"), false));
}

#[test]
fn an_abandoned_list_keeps_its_snapshot_and_voids_its_retry() {
    let mut list = List::new();
    list.on_change();
    list.on_fetched(1, "v1");
    list.on_change();
    let Action::Retry { token, .. } = list.on_fetch_failed(2) else { panic!("retry expected") };
    list.abandon();
    assert_eq!(list.on_retry_due(token), Action::Idle);
    assert!(!list.is_fetching());
    assert_eq!(list.snapshot(), Some(&"v1"));
}
