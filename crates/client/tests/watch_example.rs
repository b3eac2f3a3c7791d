//! The `watch` example host against a real node: every stdout line is one state line with
//! exactly the documented keys, and a catalog change shows as a new revision.

mod support;

use std::io::BufRead;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::*;

/// The example binary `cargo test -p mcp-fleet-client` builds next to this test's own
/// (`--test watch_example` alone does not build examples: run the package's tests).
fn example() -> std::path::PathBuf {
    let me = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/watch_example-… → target/<profile>/examples/watch
    let profile = me.parent().and_then(|deps| deps.parent()).expect("target profile dir");
    profile.join("examples").join(format!("watch{}", std::env::consts::EXE_SUFFIX))
}

#[tokio::test]
async fn the_watch_example_prints_one_state_line_per_change_and_nothing_else() {
    let server = server_with_tools(1);
    let node = handler(server.clone(), 100).await;
    let url = serve(&node).await;
    let mut child = Command::new(example())
        .args([url.as_str(), "--list", "tools"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the watch example (built by cargo test)");
    // A thread reads the pipe (blocking) and hands each line over.
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut revisions = Vec::new();
    let mut next_fresh = async || loop {
        let line = tokio::time::timeout(WAIT, lines.recv()).await.expect("a line in time");
        let line: Value = serde_json::from_str(&line.expect("the example keeps running")).expect("a JSON line");
        let keys: Vec<_> = line.as_object().expect("an object").keys().cloned().collect();
        assert_eq!(keys.len(), 5, "{line}");
        for key in ["list", "state", "revision", "fetchedAtMs", "reason"] {
            assert!(keys.iter().any(|k| k == key), "{key} in {line}");
        }
        assert_eq!(line["list"], "tools");
        if line["state"] == "fresh" {
            return line["revision"].as_str().expect("a fresh list has a revision").to_owned();
        }
    };
    revisions.push(next_fresh().await);
    add_tool(&server, "tool-new");
    revisions.push(next_fresh().await);
    assert_ne!(revisions[0], revisions[1], "the change shows as a new revision");
    child.kill().expect("stop the example");
    let _ = child.wait();
    node.shutdown().await;
}
