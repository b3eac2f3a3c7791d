use mcp_fleet_server::types::{CallToolResult, ResourceContents};
use mcp_fleet_server::typed::{Json, ToolError};
use mcp_fleet_server::{CallContext, McpServer, catalog::ResourceRead, server};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Args {
    x: i64,
}

#[derive(Serialize, JsonSchema)]
struct Out {
    y: i64,
}

struct Every;

#[server]
impl Every {
    /// No arguments.
    #[tool]
    async fn none(&self) -> &'static str {
        "none"
    }

    /// Arguments and context.
    #[tool(name = "both", title = "Both", read_only, destructive = false, idempotent, open_world = false, task = "optional")]
    async fn with_context(&self, args: Args, ctx: CallContext) -> Result<Json<Out>, ToolError> {
        let _ = ctx.tenant();
        Ok(Json(Out { y: args.x }))
    }

    #[tool(description = "Context only.")]
    async fn context_only(&self, _ctx: CallContext) -> CallToolResult {
        CallToolResult::text("ok")
    }

    /// A prompt.
    #[prompt(title = "P")]
    async fn prompt(&self, args: Args) -> String {
        args.x.to_string()
    }

    /// A template.
    #[resource(template = "x://{x}", name = "x", mime_type = "text/plain")]
    async fn read(&self, args: Args, read: ResourceRead) -> ResourceContents {
        ResourceContents::text(read.uri, "text/plain", args.x.to_string())
    }
}

fn main() {
    let server = McpServer::builder("s", "1").build();
    server.add_all(Every.into_entries()).unwrap();
}
