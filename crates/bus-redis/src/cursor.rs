//! [`Cursor`]: where a tailing consumer stands in the stream, and the gap rule.
//!
//! Stream ids (`<ms>-<seq>`) are not contiguous, so they cannot prove that nothing was skipped.
//! The versions are: the publish script does `INCR` and `XADD` atomically, so entry versions
//! are exactly 1, 2, 3, … in stream order. A consumer that last saw version `n` and next reads
//! version `m`:
//! - `m == n + 1`: nothing was missed;
//! - `m > n + 1`: entries `n+1 .. m-1` were trimmed (`MAXLEN`, `XTRIM`) before it read them;
//! - `m <= n`: the counter was reset (stream deleted and recreated): history is unknown.
//!
//! Both of the last two are reported as [`GapReason::HistoryTrimmed`]. A trim that removes
//! entries is noticed when the next entry arrives — which is also the first moment a consumer
//! could act on it.

use std::cmp::Ordering;

use mcp_fleet_bus::GapReason;

/// Position of one consumer: the last stream id read and the last version seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// Last stream id read (`0-0` before the first entry); `XREAD` continues after it.
    pub(crate) last_id: String,
    /// Version of the last entry read (the counter's value when the consumer started).
    pub(crate) last_version: u64,
}

impl Cursor {
    /// A cursor standing at `last_id` with `last_version` already seen.
    pub(crate) fn new(last_id: String, last_version: u64) -> Self {
        Cursor { last_id, last_version }
    }

    /// Move past entry `id` carrying `version` (`None`: no readable version); returns the gap
    /// to report before delivering it, if any.
    pub(crate) fn advance(&mut self, id: &str, version: Option<u64>) -> Option<GapReason> {
        self.last_id = id.to_owned();
        let version = version?;
        let expected = self.last_version + 1;
        self.last_version = version;
        (version != expected).then_some(GapReason::HistoryTrimmed)
    }

    /// Whether the stream's newest state (`id`, `version`) lies *behind* this cursor, which
    /// only happens when the stream or its counter was deleted and recreated: `XREAD` from
    /// our id would then wait forever for ids the new stream will not reach soon.
    pub(crate) fn is_ahead_of(&self, id: &str, version: u64) -> bool {
        version < self.last_version || compare_ids(id, &self.last_id) == Ordering::Less
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

    #[test]
    fn consecutive_versions_are_not_a_gap() {
        let mut c = Cursor::new("0-0".into(), 4);
        assert_eq!(c.advance("10-0", Some(5)), None);
        assert_eq!(c.advance("10-1", Some(6)), None);
        assert_eq!(c, Cursor::new("10-1".into(), 6));
    }

    #[test]
    fn skipped_or_reset_versions_are_a_gap() {
        let mut c = Cursor::new("0-0".into(), 4);
        assert_eq!(c.advance("10-0", Some(9)), Some(GapReason::HistoryTrimmed));
        assert_eq!(c.advance("11-0", Some(10)), None);
        assert_eq!(c.advance("12-0", Some(1)), Some(GapReason::HistoryTrimmed));
    }

    #[test]
    fn an_entry_without_version_moves_the_id_only() {
        let mut c = Cursor::new("0-0".into(), 4);
        assert_eq!(c.advance("10-0", None), None);
        assert_eq!(c, Cursor::new("10-0".into(), 4));
    }

    #[test]
    fn ids_compare_numerically() {
        assert_eq!(compare_ids("9-5", "10-0"), Ordering::Less);
        assert_eq!(compare_ids("10-10", "10-9"), Ordering::Greater);
        let c = Cursor::new("10-0".into(), 7);
        assert!(c.is_ahead_of("0-0", 0));
        assert!(c.is_ahead_of("10-0", 3));
        assert!(!c.is_ahead_of("10-0", 7));
        assert!(!c.is_ahead_of("11-0", 9));
    }
}
