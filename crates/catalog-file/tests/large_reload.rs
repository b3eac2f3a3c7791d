//! A reload of a large catalog (5,000 tools, then the same file again, then an edit of one
//! tool) stays short: `apply` rebuilds each list once per swap, so the reload's synchronous
//! part is linear in the catalog's size. It used to rebuild the whole list at every entry
//! removed and added — quadratic, long enough to stall a node's runtime past its membership
//! TTL. Run with `--nocapture` to see the times (BENCHMARKS.md quotes a release run).

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use mcp_fleet_catalog_file::{Catalog, Format, apply};
use mcp_fleet_server::McpServer;

/// Tools in the catalog under test.
const TOOLS: usize = 5000;
/// Generous even for a debug build on a busy machine; the quadratic rebuild took minutes.
const BOUND: Duration = Duration::from_secs(10);

fn catalog(tools: usize, edited: Option<usize>) -> Catalog {
    let mut text = String::new();
    for i in 0..tools {
        let description = if edited == Some(i) { "Edited" } else { "Greets someone" };
        let _ = write!(
            text,
            "[[tools]]\nname = \"greet_{i}\"\ndescription = \"{description}\"\n\
             input_schema = {{ type = \"object\", properties = {{ name = {{ type = \"string\" }} }} }}\n\
             text = \"Hello, {{{{name}}}} from {i}!\"\n\n"
        );
    }
    Catalog::parse(&text, Format::Toml, Path::new("large.toml")).expect("a valid catalog")
}

#[tokio::test]
async fn a_five_thousand_tool_reload_is_linear() {
    let server = McpServer::builder("large", "1").build();
    for (what, file) in [
        ("first load", catalog(TOOLS, None)),
        ("same file", catalog(TOOLS, None)),
        ("one tool edited", catalog(TOOLS, Some(42))),
    ] {
        let started = Instant::now();
        let applied = apply(&server, &file).await.expect("apply");
        let took = started.elapsed();
        println!("{TOOLS}-tool reload, {what}: {took:?} ({applied})");
        assert!(took < BOUND, "{what}: {took:?}");
    }
}
