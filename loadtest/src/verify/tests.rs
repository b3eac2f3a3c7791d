//! The verifier against crafted streams: a lost event fails, a newer version or a gap or a
//! reconnect covers, epochs are compared only within themselves, and an epoch change without
//! a gap is flagged.

use mcp_fleet_client::EventStamp;

use super::{FINAL, PublishIndex, PublishRecord, StreamVerifier};
use crate::plan::Key;

fn publish(seq: u64, key: Key, epoch: Option<u64>, version: u64, accepted_us: u64) -> PublishRecord {
    PublishRecord { seq, key, scope: None, epoch, version, sent_us: accepted_us - 1, accepted_us }
}

fn change(epoch: Option<u64>, version: u64) -> EventStamp {
    EventStamp::Change { epoch, version, published_at_ms: None }
}

fn gap(epoch: Option<u64>) -> EventStamp {
    EventStamp::Gap { epoch, last_version: None }
}

fn index(records: &[PublishRecord]) -> PublishIndex {
    let mut index = PublishIndex::new();
    for r in records {
        index.insert(*r);
    }
    index
}

fn opened(keys: &[Key]) -> StreamVerifier {
    let mut s = StreamVerifier::new(0, None, keys);
    s.on_connected(10);
    s
}

#[test]
fn every_version_delivered_passes() {
    let idx = index(&[publish(0, Key::Tools, None, 1, 100), publish(1, Key::Tools, None, 2, 200)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, change(None, 1), 150);
    s.on_frame(Key::Tools, change(None, 2), 250);
    let v = s.check(&idx, FINAL);
    assert_eq!((v.checked, v.lost), (2, 0));
}

#[test]
fn a_lost_event_fails() {
    let idx = index(&[publish(0, Key::Tools, Some(1), 1, 100), publish(1, Key::Tools, Some(1), 2, 200)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, change(Some(1), 1), 150);
    let v = s.check(&idx, FINAL);
    assert_eq!((v.checked, v.lost), (2, 1));
    assert_eq!(v.examples[0].version, 2);
    assert_eq!(v.examples[0].newest, Some(1));
}

#[test]
fn a_newer_version_covers_coalesced_older_ones() {
    let idx = index(&[publish(0, Key::Tools, None, 1, 100), publish(1, Key::Tools, None, 2, 110)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, change(None, 2), 150);
    assert_eq!(s.check(&idx, FINAL).lost, 0);
}

#[test]
fn a_gap_covers_everything_accepted_before_it_arrived_and_nothing_after() {
    let idx = index(&[publish(0, Key::Tools, None, 5, 100), publish(1, Key::Tools, None, 6, 300)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, gap(None), 200);
    let v = s.check(&idx, FINAL);
    assert_eq!((v.covered_by_gap, v.lost), (1, 1));
    assert_eq!(s.counts().gap_frames, 1);
}

#[test]
fn a_gap_for_another_key_covers_nothing_here() {
    let idx = index(&[publish(0, Key::Uri(1), None, 5, 100)]);
    let mut s = opened(&[Key::Tools, Key::Uri(1)]);
    s.on_frame(Key::Tools, gap(None), 200);
    assert_eq!(s.check(&idx, FINAL).lost, 1);
}

#[test]
fn versions_of_another_epoch_do_not_cover() {
    // Epoch 2 restarted its versions: version 9 of epoch 2 says nothing about epoch 1's 7.
    let idx = index(&[publish(0, Key::Tools, Some(1), 7, 100)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, gap(Some(2)), 90);
    s.on_frame(Key::Tools, change(Some(2), 9), 150);
    let v = s.check(&idx, FINAL);
    assert_eq!(v.lost, 1, "the gap came before the publish was accepted");
    assert_eq!(s.counts().epoch_changes_without_gap, 0);
}

#[test]
fn an_epoch_change_without_a_gap_is_flagged() {
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, change(Some(1), 4), 100);
    s.on_frame(Key::Tools, change(Some(2), 1), 200);
    assert_eq!(s.counts().epoch_changes_without_gap, 1);
    let mut t = opened(&[Key::Tools]);
    t.on_frame(Key::Tools, change(Some(1), 4), 100);
    t.on_frame(Key::Tools, gap(Some(2)), 150);
    t.on_frame(Key::Tools, change(Some(2), 1), 200);
    assert_eq!(t.counts().epoch_changes_without_gap, 0);
}

#[test]
fn a_reconnect_covers_what_was_accepted_while_away() {
    let idx = index(&[publish(0, Key::Tools, None, 3, 100), publish(1, Key::Tools, None, 4, 400)]);
    let mut s = opened(&[Key::Tools]);
    s.on_connected(200); // reconnected
    let v = s.check(&idx, FINAL);
    assert_eq!((v.covered_by_reconnect, v.lost), (1, 1));
    assert_eq!(s.counts().reconnects, 1);
}

#[test]
fn duplicates_and_reordering_are_counted_not_lost() {
    let idx = index(&[publish(0, Key::Tools, None, 1, 100), publish(1, Key::Tools, None, 2, 110)]);
    let mut s = opened(&[Key::Tools]);
    s.on_frame(Key::Tools, change(None, 2), 150);
    s.on_frame(Key::Tools, change(None, 2), 151);
    s.on_frame(Key::Tools, change(None, 1), 152);
    assert_eq!((s.counts().duplicated, s.counts().out_of_order), (1, 1));
    assert_eq!(s.check(&idx, FINAL).lost, 0);
}

#[test]
fn scoped_publishes_bind_only_their_tenant_and_foreign_keys_are_unexpected() {
    let mut scoped = publish(0, Key::Tools, None, 1, 100);
    scoped.scope = Some(1);
    let idx = index(&[scoped]);
    let mut other_tenant = StreamVerifier::new(0, Some(0), &[Key::Tools]);
    other_tenant.on_connected(10);
    assert_eq!(other_tenant.check(&idx, FINAL).checked, 0);
    let mut own_tenant = StreamVerifier::new(1, Some(1), &[Key::Tools]);
    own_tenant.on_connected(10);
    assert_eq!(own_tenant.check(&idx, FINAL).lost, 1);
    own_tenant.on_frame(Key::Prompts, change(None, 1), 120);
    assert_eq!(own_tenant.counts().unexpected, 1);
}

#[test]
fn live_checks_ignore_publishes_accepted_after_the_cutoff_and_before_the_stream_opened() {
    let idx = index(&[publish(0, Key::Tools, None, 1, 5), publish(1, Key::Tools, None, 2, 500)]);
    let s = opened(&[Key::Tools]);
    assert_eq!(s.check(&idx, 400).lost, 0, "publish 0 was sent before the stream opened; 1 is not due");
    assert_eq!(s.check(&idx, FINAL).lost, 1);
}

#[test]
fn an_unstamped_frame_covers_what_was_sent_before_it_arrived() {
    // sent at 99, 199, 299 (accepted one µs later)
    let idx = index(&[
        publish(0, Key::Tools, Some(1), 1, 100),
        publish(1, Key::Tools, Some(1), 2, 200),
        publish(2, Key::Tools, Some(1), 3, 300),
    ]);
    let mut s = opened(&[Key::Tools, Key::Prompts]);
    s.on_frame(Key::Tools, EventStamp::Unstamped, 250);
    let v = s.check(&idx, FINAL);
    assert_eq!((v.checked, v.lost), (3, 1), "the change sent at 299 is not covered by a frame at 250");
    assert_eq!(v.examples[0].version, 3);
    s.on_frame(Key::Prompts, EventStamp::Unstamped, 400);
    assert_eq!(s.check(&idx, FINAL).lost, 1, "a frame of another list covers nothing of tools");
    s.on_frame(Key::Tools, EventStamp::Unstamped, 301);
    assert_eq!(s.check(&idx, FINAL).lost, 0);
    assert_eq!(s.counts().unstamped, 3);
    assert_eq!((s.counts().duplicated, s.counts().unexpected), (0, 0));
}
