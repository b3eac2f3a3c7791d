//! The listen router and stream bodies without a socket: which streams an event marks (scope,
//! list, URI), what a body writes (ack first, coalesced frames in one buffer, keepalive only
//! when idle, the completion result last), capacity, the conservative invalidation, and the
//! tick's keepalives and lifetimes — in paused time.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use mcp_fleet_bus::{Change, EventEnvelope, EventKind};
use mcp_fleet_protocol::{RequestId, SubscriptionFilter};
use serde_json::{Value, json};

use super::keepalive;
use super::limits::ListenLimits;
use super::router::ListenRouter;
use super::stream::ListenBody;
use crate::metrics::Metrics;

fn router(limits: ListenLimits) -> ListenRouter {
    ListenRouter::new(limits, Metrics::default())
}

fn filter(params: Value) -> SubscriptionFilter {
    let params = params.as_object().cloned().unwrap_or_default();
    SubscriptionFilter::from_params(&params, 100).unwrap()
}

fn open(router: &ListenRouter, scope: Option<&str>, id: &str, notifications: Value) -> ListenBody {
    let info = Arc::new(json!({"name": "unit", "version": "1"}));
    let params = json!({"notifications": notifications});
    router
        .register((scope.map(str::to_owned), String::new()), filter(params), RequestId::String(id.into()), info)
        .unwrap()
}

fn event(change: Change) -> EventEnvelope {
    let mut env = EventEnvelope::new(change, "n");
    env.epoch = 7;
    env.version = 1;
    env
}

/// Every frame the body has ready right now, as text ("" when it would wait).
async fn ready(body: &mut ListenBody) -> String {
    let mut text = String::new();
    while let Ok(Some(frame)) = tokio::time::timeout(Duration::from_millis(1), body.frame()).await {
        let data: Bytes = frame.unwrap().into_data().unwrap();
        text.push_str(&String::from_utf8_lossy(&data));
    }
    text
}

#[tokio::test]
async fn the_ack_comes_first_and_events_reach_only_the_streams_that_follow_them() {
    let r = router(ListenLimits::default());
    let mut tools = open(&r, None, "tools", json!({"toolsListChanged": true}));
    let mut uri = open(&r, None, "uri", json!({"resourceSubscriptions": ["a://1"]}));
    let mut other_uri = open(&r, None, "other", json!({"resourceSubscriptions": ["a://2"]}));
    assert!(ready(&mut tools).await.contains("notifications/subscriptions/acknowledged"));
    for body in [&mut uri, &mut other_uri] {
        ready(body).await;
    }
    assert_eq!(r.deliver(&event(Change::list(EventKind::ToolsListChanged)), &json!({"v": 1})), 1);
    assert_eq!(r.deliver(&event(Change::resource("a://1")), &json!({"v": 2})), 1);
    let text = ready(&mut tools).await;
    assert!(
        text.contains("notifications/tools/list_changed") && text.contains(r#""dev.mcp-fleet/event":{"v":1}"#),
        "{text}"
    );
    assert!(text.contains(r#""io.modelcontextprotocol/subscriptionId":"tools""#), "stamped with its own id: {text}");
    assert!(ready(&mut uri).await.contains(r#""uri":"a://1""#));
    assert_eq!(ready(&mut other_uri).await, "", "a://2 heard nothing");
}

#[tokio::test]
async fn a_scoped_event_reaches_its_tenant_only_and_a_global_one_reaches_everyone() {
    let r = router(ListenLimits::default());
    let follow = json!({"toolsListChanged": true});
    let (mut a, mut b, mut anonymous) = (
        open(&r, Some("a"), "a", follow.clone()),
        open(&r, Some("b"), "b", follow.clone()),
        open(&r, None, "n", follow),
    );
    for body in [&mut a, &mut b, &mut anonymous] {
        ready(body).await;
    }
    assert_eq!(r.deliver(&event(Change::list(EventKind::ToolsListChanged).in_scope("a")), &json!({})), 1);
    assert!(!ready(&mut a).await.is_empty());
    assert_eq!(ready(&mut b).await, "");
    assert_eq!(ready(&mut anonymous).await, "");
    assert_eq!(r.deliver(&event(Change::list(EventKind::ToolsListChanged)), &json!({})), 3);
}

#[tokio::test]
async fn a_tenants_stream_numbers_its_frames_and_never_shows_the_bus_position() {
    let r = router(ListenLimits::default());
    let follow = json!({"toolsListChanged": true, "resourceSubscriptions": ["a://1"]});
    let (mut a, mut anonymous) = (open(&r, Some("a"), "a", follow.clone()), open(&r, None, "n", follow));
    for body in [&mut a, &mut anonymous] {
        ready(body).await;
    }
    let at = |version: u64, change: Change| {
        let mut e = event(change);
        e.version = version;
        (e, json!({"epoch": 7, "version": version, "publishedAtMs": 100 + version}))
    };
    for (e, meta) in [
        at(1, Change::list(EventKind::ToolsListChanged)),
        at(2, Change::list(EventKind::ToolsListChanged).in_scope("b")),
        at(3, Change::resource("a://1").in_scope("a")),
    ] {
        r.deliver(&e, &meta);
    }
    let text = ready(&mut a).await;
    assert!(text.contains(r#""dev.mcp-fleet/event":{"seq":1,"publishedAtMs":101}"#), "{text}");
    assert!(text.contains(r#""dev.mcp-fleet/event":{"seq":2,"publishedAtMs":103}"#), "no hole for b's event: {text}");
    assert!(!text.contains("version") && !text.contains("epoch"), "{text}");
    let text = ready(&mut anonymous).await;
    assert!(text.contains(r#"{"epoch":7,"publishedAtMs":101,"version":1}"#) && !text.contains("seq"), "{text}");

    r.invalidate_all(&json!({"gap": true, "epoch": 7, "lastVersion": 3}));
    let text = ready(&mut a).await;
    assert!(text.contains(r#"{"seq":3,"gap":true}"#) && text.contains(r#"{"seq":4,"gap":true}"#), "{text}");
    assert!(!text.contains("lastVersion"), "{text}");
    assert_eq!(ready(&mut anonymous).await.matches(r#"{"epoch":7,"gap":true,"lastVersion":3}"#).count(), 2);
}

#[tokio::test]
async fn a_burst_to_a_slow_reader_coalesces_to_the_newest_frame_in_one_write() {
    let r = router(ListenLimits::default());
    let mut body = open(&r, None, "s", json!({"toolsListChanged": true, "promptsListChanged": true}));
    ready(&mut body).await;
    for v in 1..=5 {
        r.deliver(&event(Change::list(EventKind::ToolsListChanged)), &json!({"v": v}));
    }
    r.deliver(&event(Change::list(EventKind::PromptsListChanged)), &json!({"v": 6}));
    let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let text = String::from_utf8_lossy(&frame);
    assert_eq!(text.matches("event: message").count(), 2, "one tools frame, one prompts frame: {text}");
    assert!(text.contains(r#"{"v":5}"#) && !text.contains(r#"{"v":4}"#), "{text}");
}

#[tokio::test]
async fn a_gap_invalidates_every_list_and_uri_a_stream_follows() {
    let r = router(ListenLimits::default());
    let mut body = open(&r, None, "s", json!({"toolsListChanged": true, "resourceSubscriptions": ["a://1", "a://2"]}));
    ready(&mut body).await;
    r.invalidate_all(&json!({"gap": true}));
    let text = ready(&mut body).await;
    assert_eq!(text.matches(r#"{"gap":true}"#).count(), 3, "tools + two URIs: {text}");
    assert!(!text.contains("prompts"), "{text}");
}

#[tokio::test]
async fn capacity_refuses_before_the_ack_and_frees_when_a_body_is_dropped() {
    let r = router(ListenLimits { max_streams: 1, ..ListenLimits::default() });
    let first = open(&r, None, "1", json!({}));
    let info = Arc::new(json!({}));
    let refused = r.register(
        (None, String::new()),
        filter(json!({"notifications": {}})),
        RequestId::String("2".into()),
        info.clone(),
    );
    assert_eq!(refused.unwrap_err().code.code(), -32603);
    drop(first);
    assert_eq!(r.open_streams(), 0);
    assert!(
        r.register((None, String::new()), filter(json!({"notifications": {}})), RequestId::String("3".into()), info)
            .is_ok()
    );
}

#[tokio::test]
async fn a_deaf_node_closes_its_streams_and_refuses_new_ones_until_it_hears_again() {
    let r = router(ListenLimits::default());
    let mut body = open(&r, None, "s", json!({}));
    ready(&mut body).await;
    r.set_deaf(true);
    let text = ready(&mut body).await;
    assert!(text.contains(r#""resultType":"complete""#), "{text}");
    assert!(body.frame().await.is_none(), "the stream ended");
    let info = Arc::new(json!({}));
    assert!(
        r.register(
            (None, String::new()),
            filter(json!({"notifications": {}})),
            RequestId::String("x".into()),
            info.clone()
        )
        .is_err()
    );
    r.set_deaf(false);
    assert!(
        r.register((None, String::new()), filter(json!({"notifications": {}})), RequestId::String("y".into()), info)
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn the_tick_sends_keepalives_to_idle_streams_only() {
    let r = router(ListenLimits { keepalive: Duration::from_secs(15), ..ListenLimits::default() });
    let (mut idle, mut busy) =
        (open(&r, None, "idle", json!({})), open(&r, None, "busy", json!({"toolsListChanged": true})));
    ready(&mut idle).await;
    ready(&mut busy).await;
    let trigger = crate::shutdown::ShutdownTrigger::new();
    tokio::spawn(keepalive::run(r.clone(), Duration::from_secs(15), true, trigger.subscribe()));
    r.deliver(&event(Change::list(EventKind::ToolsListChanged)), &json!({}));
    tokio::time::sleep(Duration::from_secs(16)).await;
    assert_eq!(ready(&mut idle).await, ": keepalive\n\n");
    let busy_text = ready(&mut busy).await;
    assert!(busy_text.contains("list_changed") && !busy_text.contains("keepalive"), "{busy_text}");
}

#[tokio::test(start_paused = true)]
async fn a_stream_past_its_lifetime_writes_its_completion_result_and_ends() {
    let limits = ListenLimits {
        keepalive: Duration::ZERO,
        max_lifetime: Some(Duration::from_secs(60)),
        ..ListenLimits::default()
    };
    let r = router(limits);
    let mut body = open(&r, None, "life", json!({}));
    ready(&mut body).await;
    let every = limits.tick_interval().expect("a tick runs for lifetimes");
    let trigger = crate::shutdown::ShutdownTrigger::new();
    tokio::spawn(keepalive::run(r.clone(), every, false, trigger.subscribe()));
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert_eq!(ready(&mut body).await, "", "not before ~54 s (60 s −10 %)");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let text = ready(&mut body).await;
    assert!(text.contains(r#""id":"life""#) && text.contains(r#""resultType":"complete""#), "{text}");
    assert!(body.frame().await.is_none());
    drop(body);
    assert_eq!(r.open_streams(), 0, "unregistered with its body");
}

#[tokio::test]
async fn a_task_frame_reaches_only_the_streams_of_its_principal_that_follow_the_task() {
    let r = router(ListenLimits::default());
    let open_as = |principal: &str, id: &str, tasks: Value| {
        let params = json!({"notifications": {"taskIds": tasks}});
        let filter = filter(params);
        let info = Arc::new(json!({}));
        r.register((None, principal.to_owned()), filter, RequestId::String(id.into()), info).unwrap()
    };
    let (mut mine, mut other_task, mut other_principal) = (
        open_as("alice", "m", json!(["t1"])),
        open_as("alice", "o", json!(["t2"])),
        open_as("mallory", "x", json!(["t1"])),
    );
    for body in [&mut mine, &mut other_task, &mut other_principal] {
        ready(body).await;
    }
    assert!(r.follows_task("t1") && r.follows_task("t2") && !r.follows_task("t3"));
    let params = json!({"taskId": "t1", "status": "working"});
    let frame = |status: &str| {
        let mut params = params.clone();
        params["status"] = json!(status);
        Arc::new(mcp_fleet_protocol::sse::NotificationFrame::with_params(
            "notifications/tasks",
            params.as_object().unwrap(),
            None,
        ))
    };
    assert_eq!(r.deliver_task("t1", "alice", frame("working")), 1);
    assert_eq!(r.deliver_task("t1", "alice", frame("completed")), 1);
    let text = ready(&mut mine).await;
    assert_eq!(text.matches("notifications/tasks").count(), 1, "coalesced to the newest: {text}");
    assert!(text.contains(r#""status":"completed""#) && text.contains(r#"/subscriptionId":"m""#), "{text}");
    assert_eq!(ready(&mut other_task).await, "");
    assert_eq!(ready(&mut other_principal).await, "", "another principal never hears the task");
    assert_eq!(r.deliver(&event(Change::task("t1")), &json!({})), 0, "the bare event is not a notification");
    drop(mine);
    drop(other_principal);
    assert!(!r.follows_task("t1"), "a closed stream follows nothing");
    assert_eq!(r.followed_tasks(), ["t2"]);
}

#[test]
fn the_stream_cap_holds_exactly_across_shards_and_threads() {
    // Streams land in different shards; threads race to register past the cap.
    let r = router(ListenLimits { max_streams: 100, ..ListenLimits::default() });
    let bodies = std::sync::Mutex::new(Vec::new());
    let refused = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (r, bodies, refused) = (&r, &bodies, &refused);
            s.spawn(move || {
                for i in 0..50 {
                    let info = Arc::new(json!({"name": "unit", "version": "1"}));
                    let params = json!({"notifications": {"toolsListChanged": true}});
                    let id = RequestId::String(format!("{t}-{i}"));
                    match r.register((None, String::new()), filter(params), id, info) {
                        Ok(body) => bodies.lock().unwrap().push(body),
                        Err(_) => _ = refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    }
                }
            });
        }
    });
    assert_eq!((r.open_streams(), refused.into_inner()), (100, 100));
    let marked = r.deliver(&event(Change::list(EventKind::ToolsListChanged)), &json!({"version": 1}));
    assert_eq!(marked, 100, "one delivery reaches the streams of every shard");
    bodies.lock().unwrap().truncate(10);
    assert_eq!(r.open_streams(), 10, "dropped bodies leave their shards");
}
