//! A long-running tool as a task (the `io.modelcontextprotocol/tasks` extension): a client that
//! declared the extension gets a task at once and polls `tasks/get` (on any replica) until the
//! report is done; its progress becomes the task's status message. A client without the
//! extension simply waits for the answer.
//!
//! `cargo run -p mcp-fleet-examples --bin long_task`, then call `report` with `{"steps": 5}`.

use std::time::Duration;

use mcp_fleet_server::{CallContext, HandlerOptions, McpServer, server, typed::Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Report {
    /// How many steps the report takes (a quarter of a second each).
    steps: u32,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    /// Steps taken.
    steps: u32,
    /// Where the report is.
    url: String,
}

struct Reports;

#[server]
impl Reports {
    /// Builds a report, step by step; long enough to be worth a task.
    #[tool(task = "optional", read_only)]
    async fn report(&self, Report { steps }: Report, ctx: CallContext) -> Json<Done> {
        // Become a task now rather than after `TaskOptions::create_after` (100 ms); `false`
        // when the client did not declare the extension: then it waits for the answer.
        ctx.run_as_task().await;
        for step in 1..=steps {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let message = format!("step {step} of {steps}");
            ctx.progress(f64::from(step), Some(f64::from(steps)), Some(&message)).await;
        }
        Json(Done { steps, url: format!("https://reports.example.com/{steps}.pdf") })
    }
}

#[tokio::main]
async fn main() -> mcp_fleet_examples::Result {
    let server = McpServer::builder("reports", "1.0.0").build();
    server.add_all(Reports.into_entries())?;
    mcp_fleet_examples::run(server, HandlerOptions::default()).await
}
