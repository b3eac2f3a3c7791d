//! `upstream_watch`: the upstream is polled only while a stream subscribes to its URI.

use mcp_fleet_tests::{ListenStream, McpClient};
use serde_json::json;

use crate::support::Example;

/// A listen stream subscribed to `uri`, acknowledged, on a client of its own that is gone
/// once it returns (as in `mcp_fleet_tests::cluster::Fleet::listen`), so dropping the stream
/// closes its connection.
async fn subscribed(url: &str, uri: &str) -> ListenStream {
    let mut stream = McpClient::new(url.to_owned()).listen(json!(uri), json!({"resourceSubscriptions": [uri]})).await;
    let ack = stream.next_message().await.expect("the ack");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    stream
}

#[tokio::test]
async fn the_upstream_is_watched_while_a_stream_subscribes_and_not_after() {
    let (mut example, url) = Example::start(env!("CARGO_BIN_EXE_upstream_watch"), &[], &[("POLL_MS", "100")]);
    let other = subscribed(&url, "clock://other").await;
    let mut stream = subscribed(&url, "clock://now").await;
    assert_eq!(
        example.next_line("watching clock://now").await,
        "watching clock://now",
        "only the mirrored URI is polled"
    );
    for _ in 0..2 {
        let update = stream.next_message().await.expect("an update");
        assert_eq!(update["method"], "notifications/resources/updated", "{update}");
        assert_eq!(update["params"]["uri"], "clock://now");
    }
    let read = McpClient::new(url).result("resources/read", json!({"uri": "clock://now"})).await;
    assert!(read["contents"][0]["text"].as_str().unwrap().ends_with("ms since the epoch"), "{read}");
    drop(stream);
    assert_eq!(example.next_line("stopped watching clock://now").await, "stopped watching clock://now");
    drop(other);
}
