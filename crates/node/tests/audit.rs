//! The node's audit trail (`--audit-file`): the real binary writes exactly one JSON line per
//! `tools/call`, `prompts/get` and `resources/read`, each naming this process's node, epoch
//! and executable digest, and the arguments only with `--audit-arguments`; the last records are
//! on disk when the drained process exits.

mod common;

use std::time::Duration;

use common::Node;
use mcp_fleet_tests::McpClient;
use mcp_fleet_tests::cluster::unique_name;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn binary_digest() -> String {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_mcp-fleet")).expect("read the binary");
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn the_node_writes_one_record_per_call_and_flushes_them_before_it_exits() {
    let path = std::env::temp_dir().join(format!("mcp-fleet-node-audit-{}.jsonl", unique_name()));
    let file = path.to_str().expect("utf-8 path");
    let mut node = Node::start(&["--node-id", "audit-node", "--audit-file", file, "--audit-arguments"], None);
    node.ready().await;
    let client = McpClient::new(node.url());
    let epoch = client.result("server/discover", json!({})).await["_meta"]["dev.mcp-fleet/execution"]["epoch"].clone();
    client.result("tools/call", json!({"name": "echo", "arguments": {"text": "hello"}})).await;
    client.result("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}})).await;
    client.result("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    client.result("resources/read", json!({"uri": "fleet://items/7"})).await;
    node.terminate();
    assert_eq!(node.exited(Duration::from_secs(15)).await, Some(0), "a clean drain");

    let text = std::fs::read_to_string(&path).expect("the audit file");
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("one JSON object a line")).collect();
    let seen: Vec<(&str, &str)> =
        records.iter().map(|r| (r["method"].as_str().unwrap_or("?"), r["name"].as_str().unwrap_or("?"))).collect();
    assert_eq!(
        seen,
        [
            ("tools/call", "echo"),
            ("tools/call", "add"),
            ("prompts/get", "greet"),
            ("resources/read", "fleet://items/7")
        ]
    );
    let digest = binary_digest();
    for record in &records {
        assert_eq!((&record["node"], &record["epoch"]), (&json!("audit-node"), &epoch), "{record}");
        assert_eq!(record["exeSha256"], json!(digest), "{record}");
        assert_eq!(record["outcome"], "ok", "{record}");
        assert!(record["catalogRevision"].as_str().is_some_and(|r| r.len() == 16), "{record}");
        assert!(record.get("principal").is_none(), "anonymous: {record}");
    }
    assert_eq!(records[0]["arguments"], json!({"text": "hello"}), "--audit-arguments");
    let expected: String = Sha256::digest(br#"{"a":1,"b":2}"#).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(records[1]["argumentsSha256"], json!(expected));
    let _ = std::fs::remove_file(&path);
}
