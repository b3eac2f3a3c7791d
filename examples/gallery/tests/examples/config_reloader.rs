//! `config_reloader`: rewriting the watched file swaps the tool list, and listen streams hear
//! `notifications/tools/list_changed`; a file that does not parse changes nothing.

use std::time::Duration;

use mcp_fleet_tests::McpClient;
use serde_json::json;

use crate::support::{Example, call, listen_tools, names, tools_changed};

/// A catalog file with one tool answering `reply`.
fn catalog(name: &str, reply: &str) -> String {
    format!("[[tools]]\nname = \"{name}\"\ndescription = \"Answers {reply}\"\nreply = \"{reply}\"\n")
}

#[tokio::test]
async fn rewriting_the_file_swaps_the_tools_and_listeners_hear_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.toml");
    std::fs::write(&file, catalog("greet", "Hello!")).unwrap();
    let (_example, url) = Example::start(env!("CARGO_BIN_EXE_config_reloader"), &[file.to_str().unwrap()], &[]);
    let client = McpClient::new(url);
    assert_eq!(names(&client.result("tools/list", json!({})).await), ["greet"]);
    assert_eq!(call(&client, "greet", json!({})).await["content"][0]["text"], "Hello!");

    let mut stream = listen_tools(&client, &[]).await;
    std::fs::write(&file, catalog("farewell", "Goodbye!")).unwrap();
    tools_changed(&mut stream).await;
    assert_eq!(names(&client.result("tools/list", json!({})).await), ["farewell"]);
    assert_eq!(call(&client, "farewell", json!({})).await["content"][0]["text"], "Goodbye!");

    std::fs::write(&file, "[[tools]\nname = ").unwrap();
    stream.expect_silence(Duration::from_millis(500)).await;
    assert_eq!(names(&client.result("tools/list", json!({})).await), ["farewell"], "a broken file changes nothing");
}
