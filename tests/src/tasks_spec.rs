//! The tasks extension across a fleet on a real broker: three nodes, one private stream, tasks
//! in the fleet's task store. Each function is one behaviour; `tests/tests/tasks_redis.rs` and
//! `tasks_nats.rs` run every one against their broker.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_fleet_server::HandlerOptions;
use serde_json::json;
use tokio::time::Instant;

use crate::cluster::{Broker, Fleet, NODES, tenant_from_header};
use crate::tasks::{SeverableBus, TaskClient, await_task_notification, task_options, task_server};
use crate::{WAIT, eventually};

/// The fleet's membership TTL in these tests: a dead node leaves within it.
pub const MEMBERSHIP_TTL: Duration = Duration::from_secs(2);

/// Long enough for a wrongly delivered notification to show up.
const QUIET: Duration = Duration::from_millis(300);

fn options() -> HandlerOptions {
    task_options().authenticator(tenant_from_header).membership_ttl(MEMBERSHIP_TTL)
}

/// Tenant `acme`'s client of node `i`.
fn acme(fleet: &Fleet, i: usize) -> TaskClient {
    TaskClient::new(fleet.nodes[i].url(), Some("acme"))
}

/// Tenant `evil`'s client of node `i`.
fn evil(fleet: &Fleet, i: usize) -> TaskClient {
    TaskClient::new(fleet.nodes[i].url(), Some("evil"))
}

/// A task started on node 0 is polled on node 1, answered on node 2 and finished by node 0's
/// runner; a second one is cancelled on node 1 and stops on node 0. Streams following them on
/// every node hear each status; another tenant's principal finds nothing, anywhere.
pub async fn a_task_lives_in_the_fleet_not_on_its_node(broker: Broker) {
    let Some(fleet) = Fleet::start_with(broker, options, task_server, |_, bus| bus).await else { return };
    let id = acme(&fleet, 0).start("confirm", json!({})).await;
    let mut streams = Vec::new();
    for i in 0..NODES {
        streams.push(acme(&fleet, i).listen(&[&id]).await);
    }
    let mut spy = evil(&fleet, 1).listen(&[&id]).await;

    let waiting = acme(&fleet, 1).wait_status(&id, "input_required").await;
    let key = waiting["inputRequests"].as_object().and_then(|r| r.keys().next().cloned()).expect("an input request");
    for stream in &mut streams {
        await_task_notification(stream, &id, WAIT, |t| t["status"] == "input_required").await;
    }
    for i in 0..NODES {
        let other = evil(&fleet, i);
        for (method, params) in [
            ("tasks/get", json!({"taskId": id})),
            ("tasks/update", json!({"taskId": id, "inputResponses": {key.clone(): {"action": "accept"}}})),
            ("tasks/cancel", json!({"taskId": id})),
        ] {
            let error = other.error(method, params).await.unwrap_or_else(|| panic!("{method} answered another tenant"));
            assert_eq!(error["code"], -32602, "{method} on node {i}: {error}");
            assert_eq!(error["message"], "Failed to retrieve task: Task not found");
        }
    }

    let answer = json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"ok": true}}}});
    let ack = acme(&fleet, 2).result("tasks/update", answer).await;
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let done = acme(&fleet, 1).wait_status(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: true", "{done}");
    for stream in &mut streams {
        let heard = await_task_notification(stream, &id, WAIT, |t| t["status"] == "completed").await;
        assert_eq!(heard["params"]["result"], done["result"]);
    }
    spy.expect_silence(QUIET).await;
    assert!(routed(&fleet, 2, "tasks/update") >= 1.0, "node 2 routed the update to node 0's runner");

    let slow = acme(&fleet, 0).start("slow", json!({"ms": 60_000})).await;
    let ack = acme(&fleet, 1).result("tasks/cancel", json!({"taskId": slow})).await;
    assert_eq!(ack, json!({"resultType": "complete", "_meta": ack["_meta"]}), "an empty acknowledgement");
    acme(&fleet, 2).wait_status(&slow, "cancelled").await;
    let node0 = &fleet.nodes[0].handler;
    eventually("node 0's runner stopped", WAIT, async || running(&node0.metrics_text(), "working") == 0.0).await;
    fleet.shutdown().await;
}

/// A node that dies mid-task (it cannot reach the broker any more: its membership expires, its
/// runner can write nothing): the task turns `failed` on every other replica within the
/// membership TTL, saying so, and the streams following it hear it.
pub async fn a_task_whose_node_dies_fails_everywhere_within_the_membership_ttl(broker: Broker) {
    let cut: Arc<Mutex<Option<SeverableBus>>> = Arc::default();
    let wrap = {
        let cut = cut.clone();
        move |i: usize, bus| {
            let bus = SeverableBus::new(bus);
            if i == 0 {
                *cut.lock().expect("lock") = Some(bus.clone());
            }
            Arc::new(bus) as Arc<dyn mcp_fleet_bus::ServerEventBus>
        }
    };
    let Some(fleet) = Fleet::start_with(broker, options, task_server, wrap).await else { return };
    // Every node trusts its view of the fleet once a membership TTL has passed since it started.
    tokio::time::sleep(MEMBERSHIP_TTL).await;
    let id = acme(&fleet, 0).start("slow", json!({"ms": 60_000})).await;
    let mut streams = vec![acme(&fleet, 1).listen(&[&id]).await, acme(&fleet, 2).listen(&[&id]).await];
    assert_eq!(acme(&fleet, 2).get(&id).await["status"], "working");

    let died = Instant::now();
    cut.lock().expect("lock").as_ref().expect("node 0's bus").sever();
    // The node's membership expires a TTL after its last heartbeat, at the latest a TTL after
    // the death; the survivors read the membership every TTL/20.
    let within = MEMBERSHIP_TTL + Duration::from_millis(500);
    for i in 1..NODES {
        let failed = acme(&fleet, i).wait_until(&id, within + WAIT, |t| t["status"] == "failed").await;
        let message = failed["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("node-0") && message.contains("left the fleet"), "{failed}");
        assert_eq!(failed["error"]["data"]["reason"], "replica_lost");
    }
    let took = died.elapsed();
    eprintln!("the task of the dead node turned failed on every other node {took:?} after the death");
    assert!(took <= within, "failed {took:?} after the death; the membership TTL is {MEMBERSHIP_TTL:?}");
    for stream in &mut streams {
        await_task_notification(stream, &id, WAIT, |t| t["status"] == "failed").await;
    }
    let orphaned: f64 = (1..NODES)
        .map(|i| {
            counter(&fleet.nodes[i].handler.metrics_text(), "mcp_fleet_tasks_orphaned_total{reason=\"replica_lost\"}")
        })
        .sum();
    assert!(orphaned >= 1.0, "a surviving node counted the orphan");
    fleet.shutdown().await;
}

/// A node that drains lets its tasks finish until the shutdown deadline — the others wait for
/// them though the node left the membership — and fails those still running then, saying so.
pub async fn a_drain_waits_for_tasks_until_its_deadline(broker: Broker) {
    let with_deadline = || options().shutdown_deadline(Duration::from_secs(2));
    let Some(mut fleet) = Fleet::start_with(broker, with_deadline, task_server, |_, bus| bus).await else { return };
    tokio::time::sleep(MEMBERSHIP_TTL).await;
    let short = acme(&fleet, 0).start("slow", json!({"ms": 1000})).await;
    let long = acme(&fleet, 0).start("slow", json!({"ms": 60_000})).await;
    let draining = fleet.nodes.remove(0);
    let shutdown = tokio::spawn(draining.shutdown());
    // The node left the membership at once; its tasks are not orphans while it drains.
    tokio::time::sleep(MEMBERSHIP_TTL / 2).await;
    assert_eq!(acme(&fleet, 0).get(&long).await["status"], "working");
    let done = acme(&fleet, 0).wait_status(&short, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 1000 ms");
    tokio::time::timeout(WAIT, shutdown).await.expect("the drain ends").expect("no panic");
    let failed = acme(&fleet, 1).wait_status(&long, "failed").await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("node-0") && message.contains("shut down"), "{failed}");
    fleet.shutdown().await;
}

/// `mcp_fleet_task_requests_routed_total{method}` of node `i`.
fn routed(fleet: &Fleet, i: usize, method: &str) -> f64 {
    counter(
        &fleet.nodes[i].handler.metrics_text(),
        &format!("mcp_fleet_task_requests_routed_total{{method=\"{method}\"}}"),
    )
}

/// The running tasks of a node with `status`, from its metrics text.
fn running(metrics: &str, status: &str) -> f64 {
    counter(metrics, &format!("mcp_fleet_tasks{{status=\"{status}\"}}"))
}

/// The value of the sample named exactly `sample` (0 when absent).
pub fn counter(metrics: &str, sample: &str) -> f64 {
    metrics.lines().find_map(|line| line.strip_prefix(sample)?.trim().parse().ok()).unwrap_or(0.0)
}

/// Every behaviour of this module as a `#[tokio::test]` against `$broker`.
#[macro_export]
macro_rules! task_fleet_tests {
    ($broker:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_task_lives_in_the_fleet_not_on_its_node() {
            $crate::tasks_spec::a_task_lives_in_the_fleet_not_on_its_node($broker).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_task_whose_node_dies_fails_everywhere_within_the_membership_ttl() {
            $crate::tasks_spec::a_task_whose_node_dies_fails_everywhere_within_the_membership_ttl($broker).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_drain_waits_for_tasks_until_its_deadline() {
            $crate::tasks_spec::a_drain_waits_for_tasks_until_its_deadline($broker).await;
        }
    };
}
