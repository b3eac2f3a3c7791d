//! [`Cursor`]: where a tailing consumer stands in the stream, and the gap rules.
//!
//! Stream ids (`<ms>-<seq>`) are not contiguous, so they cannot prove that nothing was skipped.
//! Epochs and versions are: the publish script settles the epoch, does `INCR` and `XADD`
//! atomically, so within one epoch entry versions are exactly n, n+1, n+2, … in stream order.
//! A consumer at `(epoch, n)` that next reads an entry `(epoch', m)`:
//! - `epoch' != epoch`: history was lost (restart, failover, keys deleted) —
//!   [`GapReason::EpochChanged`];
//! - `m == n + 1`: nothing was missed;
//! - `m > n + 1`: entries `n+1 .. m-1` were trimmed (`MAXLEN`, `XTRIM`) before it read them —
//!   [`GapReason::HistoryTrimmed`];
//! - `m <= n`: the counter went back without a new epoch, which the script prevents; reported
//!   as [`GapReason::EpochChanged`] all the same.
//!
//! An entry without an epoch (written by a node that predates epochs, during a rolling
//! upgrade) is taken to belong to the cursor's epoch.

use std::cmp::Ordering;

use mcp_fleet_bus::GapReason;

/// Where the stream stands, as the baseline script reads it atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Baseline {
    /// The current epoch.
    pub(crate) epoch: u64,
    /// The version counter's value (the newest entry's version).
    pub(crate) version: u64,
    /// The stream's last generated id (`0-0` when it does not exist).
    pub(crate) last_id: String,
    /// The version of the oldest entry still stored (`version + 1` when there is none).
    pub(crate) first_version: u64,
}

/// Position of one consumer: its epoch, the last stream id read and the last version seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// The epoch of the history being read.
    pub(crate) epoch: u64,
    /// Last stream id read (`0-0` before the first entry); `XREAD` continues after it.
    pub(crate) last_id: String,
    /// Version of the last entry read (the counter's value when the consumer started).
    pub(crate) last_version: u64,
}

impl Cursor {
    /// A cursor standing at `baseline`: everything after it is still to be read.
    pub(crate) fn at(baseline: Baseline) -> Self {
        Cursor { epoch: baseline.epoch, last_id: baseline.last_id, last_version: baseline.version }
    }

    /// Move past entry `id` carrying `epoch` and `version` (`None`: no readable version);
    /// returns the gap to report before delivering it, if any.
    pub(crate) fn advance(&mut self, id: &str, epoch: Option<u64>, version: Option<u64>) -> Option<GapReason> {
        self.last_id = id.to_owned();
        let version = version?;
        let epoch = epoch.unwrap_or(self.epoch);
        let expected = self.last_version + 1;
        let gap = if epoch != self.epoch || version < expected {
            Some(GapReason::EpochChanged)
        } else {
            (version > expected).then_some(GapReason::HistoryTrimmed)
        };
        self.epoch = epoch;
        self.last_version = version;
        gap
    }

    /// Bring the cursor in line with `baseline` (read while idle, or right after a reconnect);
    /// returns the gap to report, if entries it never read are gone:
    /// - a new epoch began, or the stream and counter lie *behind* the cursor (deleted and
    ///   recreated: `XREAD` from our id would wait for ids the new stream will not reach soon):
    ///   the cursor moves to the baseline;
    /// - the next entry it would read was trimmed away (noticed even if nothing is published
    ///   after the trim): the cursor skips to the oldest entry still stored, which it reads
    ///   next.
    pub(crate) fn resync(&mut self, baseline: Baseline) -> Option<GapReason> {
        let behind =
            baseline.version < self.last_version || compare_ids(&baseline.last_id, &self.last_id) == Ordering::Less;
        if baseline.epoch != self.epoch || behind {
            let gap = if baseline.epoch != self.epoch { GapReason::EpochChanged } else { GapReason::HistoryTrimmed };
            *self = Cursor::at(baseline);
            Some(gap)
        } else if baseline.first_version > self.last_version + 1 {
            self.last_version = baseline.first_version - 1;
            Some(GapReason::HistoryTrimmed)
        } else {
            None
        }
    }
}

/// Compare two stream ids numerically (`ms-seq`); unparsable parts count as 0.
pub(crate) fn compare_ids(a: &str, b: &str) -> Ordering {
    parse_id(a).cmp(&parse_id(b))
}

fn parse_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(epoch: u64, id: &str, version: u64) -> Cursor {
        Cursor::at(Baseline { epoch, version, last_id: id.into(), first_version: 1 })
    }

    #[test]
    fn consecutive_versions_are_not_a_gap() {
        let mut c = at(7, "0-0", 4);
        assert_eq!(c.advance("10-0", Some(7), Some(5)), None);
        assert_eq!(c.advance("10-1", None, Some(6)), None, "an entry from an older node keeps the epoch");
        assert_eq!(c, at(7, "10-1", 6));
    }

    #[test]
    fn skipped_versions_are_trimmed_history_and_a_new_epoch_is_lost_history() {
        let mut c = at(7, "0-0", 4);
        assert_eq!(c.advance("10-0", Some(7), Some(9)), Some(GapReason::HistoryTrimmed));
        assert_eq!(c.advance("11-0", Some(7), Some(10)), None);
        assert_eq!(
            c.advance("12-0", Some(8), Some(11)),
            Some(GapReason::EpochChanged),
            "failover: same counter, new epoch"
        );
        assert_eq!(c.advance("13-0", Some(8), Some(3)), Some(GapReason::EpochChanged), "counter went back");
        assert_eq!(c, at(8, "13-0", 3));
    }

    #[test]
    fn an_entry_without_version_moves_the_id_only() {
        let mut c = at(7, "0-0", 4);
        assert_eq!(c.advance("10-0", Some(7), None), None);
        assert_eq!(c, at(7, "10-0", 4));
    }

    #[test]
    fn a_baseline_in_another_epoch_or_behind_the_cursor_is_a_gap_and_a_rebase() {
        let baseline = |epoch, version, id: &str| Baseline { epoch, version, last_id: id.into(), first_version: 1 };
        let mut c = at(7, "10-0", 7);
        assert_eq!(c.resync(baseline(7, 7, "10-0")), None);
        assert_eq!(c.resync(baseline(7, 9, "11-0")), None, "entries waiting to be read");
        assert_eq!(c, at(7, "10-0", 7), "the cursor stays to read them");
        assert_eq!(c.resync(baseline(9, 7, "12-0")), Some(GapReason::EpochChanged));
        assert_eq!(c, at(9, "12-0", 7));
        assert_eq!(c.resync(baseline(9, 3, "12-0")), Some(GapReason::HistoryTrimmed), "counter behind");
        assert_eq!(c, at(9, "12-0", 3));
        assert_eq!(c.resync(baseline(9, 3, "0-0")), Some(GapReason::HistoryTrimmed), "stream behind");
        assert_eq!(c, at(9, "0-0", 3));
    }

    #[test]
    fn a_trimmed_next_entry_is_a_gap_and_reading_goes_on_from_the_oldest_kept() {
        let mut c = at(7, "10-0", 7);
        let trimmed = Baseline { epoch: 7, version: 12, last_id: "15-0".into(), first_version: 10 };
        assert_eq!(c.resync(trimmed.clone()), Some(GapReason::HistoryTrimmed), "8 and 9 are gone");
        assert_eq!(c, at(7, "10-0", 9), "XREAD goes on after 10-0 and finds 10 next");
        assert_eq!(c.resync(trimmed), None);
        let emptied = Baseline { epoch: 7, version: 12, last_id: "15-0".into(), first_version: 13 };
        assert_eq!(c.resync(emptied), Some(GapReason::HistoryTrimmed), "trimmed to nothing");
        assert_eq!(c.advance("16-0", Some(7), Some(13)), None, "the next entry is no gap");
    }

    #[test]
    fn ids_compare_numerically() {
        assert_eq!(compare_ids("9-5", "10-0"), Ordering::Less);
        assert_eq!(compare_ids("10-10", "10-9"), Ordering::Greater);
    }
}
