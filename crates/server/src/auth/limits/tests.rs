//! Unit tests of the per-principal limits, with paused tokio time.

use std::time::Duration;

use super::*;

fn limited(per_second: f64, burst: u32) -> PrincipalLimits {
    PrincipalLimits::new(PrincipalLimits::DEFAULT_MAX_STREAMS, Some(Rate { per_second, burst }))
}

#[tokio::test(start_paused = true)]
async fn burst_then_refill_at_the_rate() {
    let limits = limited(2.0, 3);
    for _ in 0..3 {
        assert_eq!(limits.check_request(Some("alice")), Ok(()));
    }
    assert_eq!(limits.check_request(Some("alice")), Err(RetryAfter(Duration::from_millis(500))));
    tokio::time::advance(Duration::from_millis(500)).await;
    assert_eq!(limits.check_request(Some("alice")), Ok(()));
    assert!(limits.check_request(Some("alice")).is_err());
}

#[tokio::test(start_paused = true)]
async fn retry_after_says_how_long_until_one_token() {
    let limits = limited(4.0, 1);
    assert!(limits.check_request(Some("a")).is_ok());
    tokio::time::advance(Duration::from_millis(100)).await;
    // 0.4 tokens accrued; 0.6 more at 4/s takes 150 ms.
    let RetryAfter(wait) = limits.check_request(Some("a")).unwrap_err();
    assert!((wait.as_secs_f64() - 0.15).abs() < 1e-6, "{wait:?}");
    assert_eq!(RetryAfter(wait).header_secs(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refused_request_costs_nothing() {
    let limits = limited(1.0, 1);
    assert!(limits.check_request(None).is_ok());
    for _ in 0..10 {
        assert!(limits.check_request(None).is_err());
    }
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(limits.check_request(None).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_batch_takes_a_token_per_message_or_none() {
    let limits = limited(1.0, 5);
    assert!(limits.check_requests(Some("a"), 3).is_ok());
    let RetryAfter(wait) = limits.check_requests(Some("a"), 3).unwrap_err();
    assert_eq!(wait, Duration::from_secs(1), "two tokens left, one more to wait for");
    assert!(limits.check_requests(Some("a"), 2).is_ok(), "the refused batch took nothing");
    tokio::time::advance(Duration::from_secs(60)).await;
    let RetryAfter(wait) = limits.check_requests(Some("a"), 20).unwrap_err();
    assert_eq!(wait, Duration::ZERO, "more than the burst never fits");
}

#[tokio::test(start_paused = true)]
async fn principals_have_their_own_buckets_and_anonymous_callers_share_one() {
    let limits = limited(1.0, 1);
    assert!(limits.check_request(Some("alice")).is_ok());
    assert!(limits.check_request(Some("bob")).is_ok());
    assert!(limits.check_request(None).is_ok());
    assert!(limits.check_request(None).is_err(), "the second anonymous caller shares the first one's bucket");
    assert!(limits.check_request(Some("alice")).is_err());
}

#[tokio::test(start_paused = true)]
async fn idle_buckets_are_pruned() {
    let limits = limited(10.0, 20); // refills in 2 s
    for i in 0..1000 {
        assert!(limits.check_request(Some(&format!("p{i}"))).is_ok());
    }
    assert_eq!(limits.tracked_principals(), 1000);
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(limits.check_request(Some("late")).is_ok());
    assert_eq!(limits.tracked_principals(), 1, "only the bucket just used is left");
}

#[tokio::test(start_paused = true)]
async fn a_busy_bucket_survives_pruning() {
    let limits = limited(1.0, 2); // refills in 2 s
    assert!(limits.check_request(Some("busy")).is_ok());
    assert!(limits.check_request(Some("busy")).is_ok());
    tokio::time::advance(Duration::from_millis(1500)).await;
    assert!(limits.check_request(Some("busy")).is_ok()); // 1.5 tokens -> 0.5 left
    tokio::time::advance(Duration::from_millis(600)).await;
    assert!(limits.check_request(Some("other")).is_ok()); // prune runs here
    assert!(limits.check_request(Some("busy")).is_ok()); // 0.5 + 0.6 = 1.1 tokens
    assert!(limits.check_request(Some("busy")).is_err(), "the bucket kept its state");
}

#[test]
fn no_rate_means_no_request_limit() {
    let limits = PrincipalLimits::default();
    for _ in 0..10_000 {
        assert!(limits.check_request(Some("alice")).is_ok());
    }
    assert_eq!(limits.tracked_principals(), 0);
    let invalid = PrincipalLimits::new(1, Some(Rate { per_second: 0.0, burst: 1 }));
    assert!(invalid.check_request(None).is_ok() && invalid.check_request(None).is_ok());
}

#[test]
fn stream_permits_count_per_principal_and_release_on_drop() {
    let limits = PrincipalLimits::new(2, None);
    let a1 = limits.acquire_stream(Some("alice")).unwrap();
    let a2 = limits.acquire_stream(Some("alice")).unwrap();
    assert_eq!(limits.acquire_stream(Some("alice")).unwrap_err(), LimitReached { limit: 2 });
    let _b = limits.acquire_stream(Some("bob")).unwrap();
    assert_eq!(limits.open_streams(Some("alice")), 2);
    drop(a1);
    assert_eq!(limits.open_streams(Some("alice")), 1);
    let _a3 = limits.acquire_stream(Some("alice")).unwrap();
    drop(a2);
}

#[test]
fn anonymous_streams_share_one_key() {
    let limits = PrincipalLimits::new(1, None);
    let _anon = limits.acquire_stream(None).unwrap();
    assert!(limits.acquire_stream(None).is_err());
    assert!(limits.acquire_stream(Some("alice")).is_ok(), "a principal is not the anonymous key");
}

#[test]
fn released_principals_leave_no_entry() {
    let limits = PrincipalLimits::new(1, None);
    let permits: Vec<_> = (0..100).map(|i| limits.acquire_stream(Some(&format!("p{i}"))).unwrap()).collect();
    assert_eq!(lock(&limits.inner.streams).len(), 100);
    drop(permits);
    assert!(lock(&limits.inner.streams).is_empty());
    assert!(PrincipalLimits::new(0, None).acquire_stream(Some("x")).is_err());
    assert!(lock(&limits.inner.streams).is_empty());
}

#[test]
fn permits_move_across_threads() {
    let limits = PrincipalLimits::new(1, None);
    let permit = limits.acquire_stream(Some("alice")).unwrap();
    std::thread::spawn(move || drop(permit)).join().unwrap();
    assert_eq!(limits.open_streams(Some("alice")), 0);
}

#[test]
fn retry_after_is_whole_seconds_rounded_up_and_at_least_one() {
    assert_eq!(RetryAfter(Duration::from_millis(200)).header_secs(), 1);
    assert_eq!(RetryAfter(Duration::from_millis(2100)).header_secs(), 3);
    assert_eq!(RetryAfter(Duration::ZERO).header_secs(), 1);
}
