//! The audit trail over HTTP: exactly one record per `tools/call`, `prompts/get` and
//! `resources/read`, and one per transition of a task, each with the identity of the code
//! that answered, the catalog revision, the principal, a digest of the arguments (the
//! arguments themselves only when asked), the outcome and the duration; and a sink that stalls
//! (a FIFO nobody reads) costs dropped records, counted, never a slower call.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcp_fleet_server::types::{Content, GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use mcp_fleet_server::{McpHandler, audit::AuditOptions, identity::ExecutionIdentity, tasks::TaskOptions};
use mcp_fleet_tests::cluster::{tenant_options, unique_name};
use mcp_fleet_tests::tasks::{TaskClient, task_server};
use mcp_fleet_tests::{TestNode, WAIT, eventually};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcp-fleet-audit-{}-{name}", unique_name()))
}

/// The records in the JSON-lines file at `path`.
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A task-capable node, tenants from `x-tenant`, with a `greet` prompt and the audit trail
/// `audit`, and an identity with a known digest and commit.
async fn node(audit: AuditOptions) -> TestNode {
    let server = task_server();
    let greet = Prompt::new(
        "greet",
        "Greets someone",
        vec![PromptArgument { name: "name".into(), title: None, description: None, required: true }],
    );
    server.prompt(greet, |get| async move {
        let name = get.arguments.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(GetPromptResult {
            messages: vec![PromptMessage { role: Role::User, content: Content::text(format!("Hello {name}")) }],
            ..GetPromptResult::default()
        })
    });
    let mut identity = ExecutionIdentity::minted("9.9.9");
    identity.exe_sha256 = Some("ab".repeat(32));
    identity.commit = Some("c0ffee".into());
    let tasks = TaskOptions::default()
        .create_after(Duration::from_millis(50))
        .poll_interval(Duration::from_millis(100))
        .status_interval(Duration::from_millis(20));
    let options = tenant_options().tasks(tasks).node_id("audited-node").identity(identity).audit(audit);
    TestNode::start(server, options).await
}

fn metric(handler: &McpHandler, name: &str) -> u64 {
    let text = handler.metrics_text();
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[tokio::test]
async fn every_call_and_task_transition_leaves_exactly_one_record() {
    let path = temp_path("calls.jsonl");
    let node = node(AuditOptions::file(&path)).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let echo = client.result("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
    assert_eq!(echo["content"][0]["text"], "hi", "{echo}");
    let unknown = client.error("tools/call", json!({"name": "nope", "arguments": {}})).await.expect("an error");
    assert_eq!(unknown["code"], -32602);
    let bad = client.result("tools/call", json!({"name": "echo", "arguments": {"text": 5}})).await;
    assert_eq!(bad["isError"], true, "{bad}");
    client.result("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    client.result("resources/read", json!({"uri": "test://a"})).await;
    let task = client.start("slow", json!({"ms": 300})).await;
    client.wait_status(&task, "completed").await;

    // Eight records: five calls, the call that became a task, and its two transitions.
    eventually("every record is written", WAIT, async || records(&path).len() >= 8).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let all = records(&path);
    assert_eq!(all.len(), 8, "{all:#?}");
    let by = |method: &str, name: &str| -> Vec<&Value> {
        all.iter().filter(|r| r["method"] == method && r["name"] == name).collect()
    };
    let epoch = client.result("server/discover", json!({})).await["_meta"]["dev.mcp-fleet/execution"]["epoch"].clone();
    assert!(epoch.is_string(), "{epoch}");
    for record in &all {
        assert_eq!(record["node"], "audited-node", "{record}");
        assert_eq!(record["epoch"], epoch, "{record}");
        assert_eq!(record["exeSha256"], json!("ab".repeat(32)), "{record}");
        assert_eq!(record["version"], "9.9.9");
        assert_eq!(record["commit"], "c0ffee");
        assert_eq!(record["principal"], json!({"tenant": "acme", "subject": "user@acme"}), "{record}");
        assert!(record["time"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 24), "{record}");
        assert!(record["durationMs"].as_f64().is_some_and(|d| d >= 0.0), "{record}");
        assert!(record.get("arguments").is_none(), "arguments are kept only when enabled: {record}");
    }

    let echoes = by("tools/call", "echo");
    assert_eq!(echoes.len(), 2, "{echoes:#?}");
    assert_eq!(echoes[0]["outcome"], "ok");
    assert_eq!(echoes[0]["argumentsSha256"], json!(sha256_hex(br#"{"text":"hi"}"#)));
    assert_eq!(echoes[1]["outcome"], "tool_error");
    let revision = client.result("tools/list", json!({})).await["_meta"]["dev.mcp-fleet/catalog"]["revision"].clone();
    assert_eq!(echoes[0]["catalogRevision"], revision);
    let unknown = by("tools/call", "nope");
    assert_eq!((unknown.len(), &unknown[0]["outcome"], &unknown[0]["errorCode"]), (1, &json!("error"), &json!(-32602)));
    let prompt = by("prompts/get", "greet");
    assert_eq!((prompt.len(), &prompt[0]["outcome"]), (1, &json!("ok")));
    assert_eq!(prompt[0]["argumentsSha256"], json!(sha256_hex(br#"{"name":"Ada"}"#)));
    let read = by("resources/read", "test://a");
    assert_eq!((read.len(), &read[0]["outcome"]), (1, &json!("ok")));
    assert!(read[0].get("argumentsSha256").is_none(), "a read has no arguments");

    let call = by("tools/call", "slow");
    assert_eq!((call.len(), &call[0]["outcome"], &call[0]["taskId"]), (1, &json!("task"), &json!(task)));
    let transitions: Vec<(&Value, &Value)> =
        by("task", "slow").iter().map(|r| (&r["previousStatus"], &r["outcome"])).collect();
    assert_eq!(transitions, [(&Value::Null, &json!("working")), (&json!("working"), &json!("completed"))]);
    assert!(by("task", "slow").iter().all(|r| r["taskId"] == json!(task)));
    assert_eq!(metric(&node.handler, "mcp_fleet_audit_records_written_total"), 8);
    assert_eq!(metric(&node.handler, "mcp_fleet_audit_records_dropped_total"), 0);
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn the_arguments_themselves_are_recorded_only_when_enabled() {
    let path = temp_path("arguments.jsonl");
    let node = node(AuditOptions::file(&path).arguments(true)).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    client.result("tools/call", json!({"name": "echo", "arguments": {"text": "secret"}})).await;
    eventually("the record is written", WAIT, async || records(&path).len() == 1).await;
    assert_eq!(records(&path)[0]["arguments"], json!({"text": "secret"}));
    let _ = std::fs::remove_file(&path);
}

/// A FIFO nobody opens for reading: the writer blocks in `open` for good.
fn stalled_fifo() -> PathBuf {
    let path = temp_path("stalled.fifo");
    let made = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo");
    assert!(made.success());
    path
}

#[tokio::test]
async fn a_stalled_sink_drops_and_counts_records_and_never_slows_a_call() {
    let fifo = stalled_fifo();
    let node = node(AuditOptions::file(&fifo).capacity(16)).await;
    let client = TaskClient::new(node.url(), Some("acme"));
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let calls = 200;
    for _ in 0..calls {
        let call = Instant::now();
        let result = client.result("tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).await;
        assert_eq!(result["content"][0]["text"], "x", "{result}");
        slowest = slowest.max(call.elapsed());
    }
    let total = started.elapsed();
    assert!(slowest < Duration::from_millis(500), "the slowest call took {slowest:?}");
    assert!(total < Duration::from_secs(10), "{calls} calls took {total:?}");
    // The writer holds one record, the queue 16: every other one is dropped and counted.
    let dropped = metric(&node.handler, "mcp_fleet_audit_records_dropped_total");
    assert_eq!(dropped, calls as u64 - 17, "dropped {dropped} of {calls}");
    assert_eq!(metric(&node.handler, "mcp_fleet_audit_records_written_total"), 0);

    // The drain does not wait for the stalled sink beyond its short grace.
    let drain = Instant::now();
    node.handler.shutdown().await;
    assert!(drain.elapsed() < Duration::from_secs(3), "the drain took {:?}", drain.elapsed());
    // Unblock the writer thread (a reader opens the FIFO; nobody waits for it) and remove the
    // FIFO's name.
    std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::read(&fifo).map(|b| b.len())
    });
    let _ = std::fs::remove_file(&fifo);
}
