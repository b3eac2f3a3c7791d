//! The consumer task's rules, as pure functions of where it stands (see `tail`'s module docs):
//! where a message falls after the last one delivered, whether the stream was rolled back, and
//! when a hole or a stall is fetched again rather than reported as a gap.

use super::stream::StreamState;

/// Where a message at stream `sequence` stands after `last` was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// At or before `last`: a replay after the consumer was re-created; skip it.
    Replay,
    /// `last + 1`: deliver it.
    Next,
    /// Past `last + 1`: something between was not delivered.
    AfterMissing,
}

pub(super) fn place(last: u64, sequence: u64) -> Place {
    match sequence.cmp(&(last + 1)) {
        std::cmp::Ordering::Less => Place::Replay,
        std::cmp::Ordering::Equal => Place::Next,
        std::cmp::Ordering::Greater => Place::AfterMissing,
    }
}

/// Whether the stream (of the epoch being read) ends before `last`: it lost its tail.
pub(super) fn rolled_back(state: &StreamState, last: u64) -> bool {
    state.last_sequence < last
}

/// After messages went missing past `last`: fetch them again when the stream still holds them
/// and this is the first attempt at this place (a second one means they cannot be read:
/// report the gap instead of looping).
pub(super) fn fetch_again(still_stored: bool, retried_at: Option<u64>, last: u64) -> bool {
    still_stored && retried_at != Some(last)
}

/// A consumer stalled after `last`: give up on the waiting messages (a gap) when a fresh
/// consumer already stalled at the same place; otherwise re-create it once more.
pub(super) fn give_up_stall(stalled_at: Option<u64>, last: u64) -> bool {
    stalled_at == Some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_a_replay_the_next_one_or_after_a_hole() {
        assert_eq!(place(5, 3), Place::Replay);
        assert_eq!(place(5, 5), Place::Replay);
        assert_eq!(place(5, 6), Place::Next);
        assert_eq!(place(5, 8), Place::AfterMissing);
        assert_eq!(place(0, 1), Place::Next);
    }

    #[test]
    fn a_hole_still_stored_is_fetched_again_once_then_reported() {
        assert!(fetch_again(true, None, 5), "in flight: fetch again, no gap");
        assert!(!fetch_again(true, Some(5), 5), "the same hole twice: a gap, not a loop");
        assert!(fetch_again(true, Some(3), 5), "a new hole is fetched again");
        assert!(!fetch_again(false, None, 5), "trimmed away: a gap");
    }

    #[test]
    fn a_stream_ending_before_the_consumer_was_rolled_back() {
        let ending_at = |last_sequence| StreamState { epoch: 7, first_sequence: 1, last_sequence };
        assert!(rolled_back(&ending_at(3800), 5000), "a restored snapshot: 3801… will be reused");
        assert!(!rolled_back(&ending_at(5000), 5000));
        assert!(!rolled_back(&ending_at(5200), 5000), "messages waiting");
    }

    #[test]
    fn a_stall_is_retried_once_per_place_then_skipped() {
        assert!(!give_up_stall(None, 5), "first stall: re-create the consumer");
        assert!(give_up_stall(Some(5), 5), "a fresh consumer stalled at the same place: a gap");
        assert!(!give_up_stall(Some(3), 5), "a stall at a new place is retried");
    }
}
