//! Execution identity, observed at start: two processes of the same binary on one bus show
//! different epochs and the same executable digest — in `server/discover`, in `/admin/fleet`
//! (each member, and the builds with their counts) and in the `build_info` metric.

mod common;

use std::time::Duration;

use common::{Node, private_bus};
use mcp_fleet_tests::cluster::Broker;
use mcp_fleet_tests::{McpClient, eventually};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const KEY: &str = "dev.mcp-fleet/execution";

/// SHA-256 (hex) of the binary the test starts.
fn binary_digest() -> String {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_mcp-fleet")).expect("read the binary");
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn discovered(node: &Node) -> Value {
    let result = McpClient::new(node.url()).result("server/discover", json!({})).await;
    result["_meta"][KEY].clone()
}

#[tokio::test]
async fn two_processes_of_one_binary_show_different_epochs_and_the_same_digest() {
    let Some(bus) = private_bus(Broker::Redis).await else { return };
    let args = ["--bus", bus.as_str(), "--membership-ttl-secs", "2"];
    let (a, b) = (Node::start(&args, None), Node::start(&args, None));
    a.ready().await;
    b.ready().await;
    let (ida, idb) = (discovered(&a).await, discovered(&b).await);
    let digest = binary_digest();
    assert_eq!(ida["exeSha256"], json!(digest), "{ida}");
    assert_eq!(idb["exeSha256"], json!(digest), "{idb}");
    assert_ne!(ida["epoch"], idb["epoch"], "each process mints its own epoch");
    assert_eq!(ida["version"], json!(env!("CARGO_PKG_VERSION")));
    assert!(ida["epoch"].as_str().is_some_and(|e| !e.is_empty()) && ida["startedAtMs"].as_u64().is_some());

    // The fleet view: every member carries its identity, and one build is counted twice.
    eventually("a sees both members with their identities", Duration::from_secs(10), async || {
        let Some((200, body)) = a.admin_get("/admin/fleet").await else { return false };
        let fleet: Value = serde_json::from_str(&body).expect("json");
        let epochs: Vec<&Value> =
            fleet["members"].as_array().into_iter().flatten().map(|m| &m["identity"]["epoch"]).collect();
        epochs.len() == 2
            && epochs.contains(&&ida["epoch"])
            && epochs.contains(&&idb["epoch"])
            && fleet["builds"]
                == json!([{"exeSha256": digest, "version": env!("CARGO_PKG_VERSION"),
                "commit": ida["commit"], "image": null, "members": 2}])
    })
    .await;

    let (_, metrics) = a.admin_get("/metrics").await.expect("metrics");
    let line = metrics.lines().find(|l| l.starts_with("mcp_fleet_build_info{")).expect("build_info");
    assert!(line.contains(&format!("exe_sha256=\"{digest}\"")) && line.ends_with(" 1"), "{line}");
}
