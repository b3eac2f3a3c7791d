//! `HandlerOptions::identity_in_tools_revision`: two replicas serving the same catalog from
//! different builds show different tools revisions with the option (so a rollout that keeps
//! the catalog identical is announced once the fleet converges on the new build), equal ones
//! without it; replicas of one build agree either way, and the other lists never change.

use mcp_fleet_server::{HandlerOptions, identity::ExecutionIdentity};
use mcp_fleet_tests::{McpClient, TestNode, WAIT, eventually, test_server};
use serde_json::{Value, json};

fn build(digest: &str) -> ExecutionIdentity {
    let mut identity = ExecutionIdentity::minted("1.0.0");
    identity.exe_sha256 = Some(digest.repeat(64 / digest.len()));
    identity
}

/// The catalog revisions a node with `identity` and the option `on` shows in discover, and its
/// `tools/list` revision.
async fn revisions(identity: ExecutionIdentity, on: bool) -> (Value, Value) {
    let options = HandlerOptions::default().identity(identity).identity_in_tools_revision(on);
    let node = TestNode::start(test_server(), options).await;
    let client = McpClient::new(node.url());
    let discover = client.result("server/discover", json!({})).await["_meta"]["dev.mcp-fleet/catalog"].clone();
    let listed = client.result("tools/list", json!({})).await["_meta"]["dev.mcp-fleet/catalog"]["revision"].clone();
    assert_eq!(discover["tools"], listed, "discover and the list agree");
    let announced = async || {
        let own = node.handler.fleet().members.into_iter().find(|m| m.is_self);
        own.and_then(|m| m.catalogs.get("").map(|c| json!(c.tools))) == Some(listed.clone())
    };
    eventually("the membership record announces the same revision", WAIT, announced).await;
    (discover, listed)
}

#[tokio::test]
async fn the_build_is_folded_into_the_tools_revision_only_with_the_option() {
    let (old_off, old_tools_off) = revisions(build("aa"), false).await;
    let (new_off, new_tools_off) = revisions(build("bb"), false).await;
    assert_eq!(old_tools_off, new_tools_off, "without the option the catalog alone decides");
    assert_eq!(old_off, new_off);

    let (old_on, old_tools) = revisions(build("aa"), true).await;
    let (new_on, new_tools) = revisions(build("bb"), true).await;
    assert_ne!(old_tools, new_tools, "two builds, one catalog: two revisions");
    assert_ne!(old_tools, old_tools_off);
    let (_, same_build) = revisions(build("aa"), true).await;
    assert_eq!(same_build, old_tools, "replicas of one build agree (the epoch is not folded in)");
    for list in ["prompts", "resources", "resourceTemplates"] {
        assert_eq!(old_on[list], old_off[list], "{list}");
        assert_eq!(new_on[list], old_off[list], "{list}");
    }
}
