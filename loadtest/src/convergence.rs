//! Time to convergence of re-listing clients: when does a client hold a snapshot fetched
//! *after* it heard a given change?
//!
//! [`ClientLists`] follows one client's lists as its [`Observer`](mcp_fleet_client::Observer)
//! hooks fire: what it has heard (newest version per epoch, and the last gap or reconnect,
//! which cover everything before them), what each fetch covered when it started, and when
//! each snapshot was installed. [`ClientLists::converged_at`] then answers, for any publish,
//! when the first snapshot covering it was installed.

use mcp_fleet_client::{EventStamp, ListKind};

use crate::plan::Key;
use crate::verify::{PublishRecord, epochs_match};

/// What a client had heard about one list at some moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Epoch of `version`.
    pub epoch: Option<u64>,
    /// Newest version heard in that epoch.
    pub version: Option<u64>,
    /// Arrival of the last gap frame or (re)connect: covers every publish accepted before.
    pub cover_us: u64,
    /// Arrival of the last notification without a bus position (a tenant's stream, a server
    /// other than mcp-fleet): covers every publish *sent* before it. Such a notification can
    /// reach the client before the publisher hears its publish accepted, so comparing it with
    /// the acceptance would leave that publish unconverged forever; in a burst it may be an
    /// earlier publish's notification, which makes the figure at most one fetch optimistic.
    pub notified_us: u64,
}

impl Coverage {
    /// Whether a snapshot fetched with this much heard reflects `publish`.
    pub fn covers(&self, publish: &PublishRecord) -> bool {
        let by_version = epochs_match(self.epoch, publish.epoch) && self.version.is_some_and(|v| v >= publish.version);
        by_version || publish.accepted_us <= self.cover_us || publish.sent_us < self.notified_us
    }

    fn hear(&mut self, stamp: EventStamp, at_us: u64) {
        match stamp {
            EventStamp::Change { epoch, version, .. } => {
                if epochs_match(self.epoch, epoch) {
                    self.version = self.version.max(Some(version));
                } else {
                    self.version = Some(version);
                }
                self.epoch = epoch.or(self.epoch);
            }
            EventStamp::Gap { epoch, .. } => {
                self.cover_us = at_us;
                if epoch.is_some() && !epochs_match(self.epoch, epoch) {
                    (self.epoch, self.version) = (epoch, None);
                }
            }
            EventStamp::Unstamped => self.notified_us = at_us,
        }
    }
}

/// One installed snapshot: what it covered and when it was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Install {
    /// What was heard when its fetch started.
    pub coverage: Coverage,
    /// When it was installed (µs since the Unix epoch).
    pub at_us: u64,
}

#[derive(Debug, Clone)]
struct ListRecord {
    key: Key,
    heard: Coverage,
    heard_n: u64,
    in_flight: Option<(u64, Coverage)>,
    covered_n: u64,
    installs: Vec<Install>,
    /// Whether installs span more than one known epoch (then versions are not monotone
    /// across them and lookups fall back to a scan).
    mixed_epochs: bool,
    revision: Option<String>,
}

/// One client's re-listed lists.
#[derive(Debug, Clone, Default)]
pub struct ClientLists {
    lists: Vec<ListRecord>,
}

impl ClientLists {
    /// A client re-listing `lists`.
    pub fn new(lists: &[ListKind]) -> ClientLists {
        let lists = lists
            .iter()
            .map(|k| ListRecord {
                key: Key::of_list(*k),
                heard: Coverage::default(),
                heard_n: 0,
                in_flight: None,
                covered_n: 0,
                installs: Vec::new(),
                mixed_epochs: false,
                revision: None,
            })
            .collect();
        ClientLists { lists }
    }

    /// The listen stream was acknowledged at `at_us` (first time or again): every list is
    /// re-listed and covers everything before.
    pub fn on_connected(&mut self, at_us: u64) {
        for list in &mut self.lists {
            list.heard.cover_us = at_us;
            list.heard_n += 1;
        }
    }

    /// A `list_changed` for `notified` arrived at `at_us`.
    pub fn on_notification(&mut self, notified: ListKind, stamp: EventStamp, at_us: u64) {
        let key = Key::of_list(notified);
        for list in self.lists.iter_mut().filter(|l| l.key == key) {
            list.heard.hear(stamp, at_us);
            list.heard_n += 1;
        }
    }

    /// A fetch of `kind` covering notification `covers` started.
    pub fn on_fetch_started(&mut self, kind: ListKind, covers: u64) {
        if let Some(list) = self.list_mut(kind) {
            list.in_flight = Some((covers, list.heard));
        }
    }

    /// The fetch of `kind` ended at `at_us`, installing a snapshot of `revision` on success.
    pub fn on_fetch_finished(&mut self, kind: ListKind, revision: Option<&str>, at_us: u64) {
        let Some(list) = self.list_mut(kind) else { return };
        let Some((covers, coverage)) = list.in_flight.take() else { return };
        if let Some(revision) = revision {
            let known = list.installs.iter().rev().find_map(|i| i.coverage.epoch);
            list.mixed_epochs |= known.is_some() && coverage.epoch.is_some() && known != coverage.epoch;
            list.installs.push(Install { coverage, at_us });
            list.covered_n = list.covered_n.max(covers);
            list.revision = Some(revision.to_owned());
        }
    }

    /// Whether every list has a snapshot.
    pub fn has_all_snapshots(&self) -> bool {
        self.lists.iter().all(|l| !l.installs.is_empty())
    }

    /// Lists with a notification their installed snapshot does not cover yet.
    pub fn stale_lists(&self) -> usize {
        self.lists.iter().filter(|l| l.heard_n > l.covered_n).count()
    }

    /// When this client first held a snapshot covering `publish` (`None`: never, or the
    /// client does not re-list its key).
    ///
    /// Installs only ever cover more (the gap/reconnect and notification times and, within an
    /// epoch, the version heard never decrease), so this is three binary searches — it runs for every
    /// (client, publish) pair at the end of a run.
    pub fn converged_at(&self, publish: &PublishRecord) -> Option<u64> {
        let list = self.lists.iter().find(|l| l.key == publish.key)?;
        let installs = &list.installs;
        if list.mixed_epochs {
            return installs.iter().find(|i| i.coverage.covers(publish)).map(|i| i.at_us);
        }
        let by_cover = installs.partition_point(|i| i.coverage.cover_us < publish.accepted_us);
        let by_notice = installs.partition_point(|i| i.coverage.notified_us <= publish.sent_us);
        let by_version = installs.partition_point(|i| {
            !(epochs_match(i.coverage.epoch, publish.epoch) && i.coverage.version.is_some_and(|v| v >= publish.version))
        });
        installs.get(by_cover.min(by_notice).min(by_version)).map(|i| i.at_us)
    }

    /// Whether this client re-lists `key`.
    pub fn follows(&self, key: Key) -> bool {
        self.lists.iter().any(|l| l.key == key)
    }

    /// The revision of each list's installed snapshot.
    pub fn revisions(&self) -> impl Iterator<Item = (Key, Option<&str>)> {
        self.lists.iter().map(|l| (l.key, l.revision.as_deref()))
    }

    fn list_mut(&mut self, kind: ListKind) -> Option<&mut ListRecord> {
        let key = Key::of_list(kind);
        self.lists.iter_mut().find(|l| l.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(version: u64, accepted_us: u64) -> PublishRecord {
        PublishRecord {
            seq: 0,
            key: Key::Tools,
            scope: None,
            epoch: Some(1),
            version,
            sent_us: accepted_us - 10,
            accepted_us,
        }
    }

    fn change(version: u64) -> EventStamp {
        EventStamp::Change { epoch: Some(1), version, published_at_ms: None }
    }

    #[test]
    fn converges_at_the_first_install_fetched_after_hearing_the_change() {
        let mut c = ClientLists::new(&[ListKind::Tools]);
        c.on_connected(100);
        c.on_fetch_started(ListKind::Tools, 1);
        c.on_fetch_finished(ListKind::Tools, Some("r0"), 150);
        let p = publish(5, 1_000);
        assert_eq!(c.converged_at(&p), None);
        c.on_notification(ListKind::Tools, change(5), 1_010);
        assert_eq!(c.stale_lists(), 1);
        c.on_fetch_started(ListKind::Tools, 2);
        c.on_fetch_finished(ListKind::Tools, None, 1_100); // failed: nothing installed
        c.on_fetch_started(ListKind::Tools, 2);
        c.on_fetch_finished(ListKind::Tools, Some("r1"), 1_200);
        assert_eq!(c.converged_at(&p), Some(1_200));
        assert_eq!(c.stale_lists(), 0);
    }

    #[test]
    fn a_fetch_started_before_hearing_the_change_does_not_count() {
        let mut c = ClientLists::new(&[ListKind::Tools]);
        c.on_connected(100);
        c.on_fetch_started(ListKind::Tools, 1);
        c.on_notification(ListKind::Tools, change(5), 1_010);
        c.on_fetch_finished(ListKind::Tools, Some("r0"), 1_050);
        assert_eq!(c.converged_at(&publish(5, 1_000)), None);
    }

    #[test]
    fn binary_searches_agree_with_a_scan() {
        let mut c = ClientLists::new(&[ListKind::Tools]);
        c.on_connected(100);
        let mut covers = 0;
        for v in 1..=40u64 {
            if v % 3 == 0 {
                c.on_notification(ListKind::Tools, EventStamp::Gap { epoch: None, last_version: None }, 1_000 + v * 10);
            } else {
                c.on_notification(ListKind::Tools, change(v), 1_000 + v * 10);
            }
            if v % 4 == 0 {
                covers += 1;
                c.on_fetch_started(ListKind::Tools, covers);
                c.on_fetch_finished(ListKind::Tools, Some("r"), 1_005 + v * 10);
            }
        }
        let list = &c.lists[0];
        for v in 1..=45u64 {
            let p = publish(v, 1_000 + v * 10 - 5);
            let scan = list.installs.iter().find(|i| i.coverage.covers(&p)).map(|i| i.at_us);
            assert_eq!(c.converged_at(&p), scan, "version {v}");
        }
    }

    #[test]
    fn a_gap_heard_after_acceptance_covers() {
        let mut c = ClientLists::new(&[ListKind::Tools]);
        c.on_connected(100);
        c.on_notification(ListKind::Tools, EventStamp::Gap { epoch: None, last_version: None }, 2_000);
        c.on_fetch_started(ListKind::Tools, 2);
        c.on_fetch_finished(ListKind::Tools, Some("r"), 2_100);
        assert_eq!(c.converged_at(&publish(9, 1_500)), Some(2_100));
        assert_eq!(c.converged_at(&publish(9, 2_500)), None);
    }

    #[test]
    fn an_unstamped_notification_covers_what_was_sent_before_it_even_if_not_yet_accepted() {
        // A tenant's stream carries no bus position; its notification can overtake the
        // publisher's acceptance (sent 1_000, heard 1_020, accepted 1_050).
        let mut c = ClientLists::new(&[ListKind::Tools]);
        c.on_connected(100);
        c.on_notification(ListKind::Tools, EventStamp::Unstamped, 1_020);
        c.on_fetch_started(ListKind::Tools, 2);
        c.on_fetch_finished(ListKind::Tools, Some("r"), 1_100);
        let overtaken = PublishRecord { sent_us: 1_000, accepted_us: 1_050, ..publish(9, 1_050) };
        assert_eq!(c.converged_at(&overtaken), Some(1_100));
        let later = PublishRecord { sent_us: 1_030, accepted_us: 1_060, ..publish(10, 1_060) };
        assert_eq!(c.converged_at(&later), None, "sent after the notification arrived");
        let scan = c.lists[0].installs.iter().find(|i| i.coverage.covers(&overtaken)).map(|i| i.at_us);
        assert_eq!(scan, Some(1_100));
    }
}
