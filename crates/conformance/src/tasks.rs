//! The tasks extension's fixtures (`io.modelcontextprotocol/tasks`, the suite's `tasks-*`
//! scenarios): ordinary handlers — they return or await as any tool does — registered as tools
//! whose calls may become tasks. The framework turns a call into a task when it runs longer
//! than `TaskOptions::create_after` or when the handler calls `ctx.run_as_task()`, stores it in
//! the fleet's task store, and turns an `input_required` answer into the task's input requests.
//!
//! - `greet`: never a task.
//! - `slow_compute`: a task when it takes a while and the client supports tasks (`seconds: 0`
//!   answers at once); a cancel stops it.
//! - `failing_job`, `protocol_error_job`: require tasks; a tool error (`completed`,
//!   `isError`), and a protocol error (`failed`).
//! - `confirm_delete`, `multi_input`: become tasks at once, then ask for input through the task
//!   (one request, and two at once).
//! - `test_tool_with_task`: MRTR first (synchronously, before any task), then a task.

use std::time::Duration;

use mcp_fleet_server::RpcError;
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{CallContext, InputRequired, McpServer, Outcome, catalog::TaskSupport};
use serde_json::{Value, json};

use crate::mrtr::{elicit, response};

type ToolOutcome = Result<Outcome<CallToolResult>, RpcError>;

pub(crate) fn register(server: &McpServer) {
    let schema = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required});
    server.tool(
        Tool::new("greet", "Greets someone (never a task)")
            .input_schema(schema(json!({"name": {"type": "string"}}), &["name"])),
        |call| async move {
            let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or("stranger");
            Ok(CallToolResult::text(format!("Hello, {name}!")))
        },
    );
    server.task_tool(
        Tool::new("slow_compute", "Sleeps for `seconds`, then answers; a task when it takes a while")
            .input_schema(schema(json!({"seconds": {"type": "number"}, "label": {"type": "string"}}), &["seconds"])),
        TaskSupport::Optional,
        |call| async move {
            let seconds = call.arguments.get("seconds").and_then(Value::as_f64).unwrap_or(0.0).clamp(0.0, 3600.0);
            let label = call.arguments.get("label").and_then(Value::as_str).unwrap_or("compute");
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            Ok(CallToolResult::text(format!("{label}: computed in {seconds} s")))
        },
    );
    server.task_tool(
        Tool::new("failing_job", "Runs as a task for about a second, then reports a tool error"),
        TaskSupport::Required,
        |_call| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(CallToolResult::error("The job failed: this tool always reports an execution error"))
        },
    );
    server.task_tool(
        Tool::new("protocol_error_job", "Runs as a task, then fails with a JSON-RPC error"),
        TaskSupport::Required,
        |_call| async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Err::<CallToolResult, _>(RpcError::internal(
                "The job crashed: this tool always fails with a protocol error",
            ))
        },
    );
    server.task_tool(
        Tool::new("confirm_delete", "Becomes a task, then asks to confirm deleting a file")
            .input_schema(schema(json!({"filename": {"type": "string"}}), &["filename"])),
        TaskSupport::Optional,
        |call| async move {
            call.ctx.run_as_task().await;
            let filename = call.arguments.get("filename").and_then(Value::as_str).unwrap_or("the file");
            confirm_delete(&call.ctx, filename)
        },
    );
    server.task_tool(
        Tool::new("multi_input", "Becomes a task, then asks two questions at once"),
        TaskSupport::Optional,
        |call| async move {
            call.ctx.run_as_task().await;
            multi_input(&call.ctx)
        },
    );
    server.task_tool(
        Tool::new("test_tool_with_task", "Asks the user's name (MRTR), then finishes as a task"),
        TaskSupport::Required,
        |call| async move {
            match response(&call.ctx, "user_name") {
                Some(answer) => {
                    call.ctx.run_as_task().await;
                    let name = accepted(answer, "name").unwrap_or("stranger");
                    Ok(CallToolResult::text(format!("Hello, {name}! (finished as a task)")).into())
                }
                None => Ok(Outcome::InputRequired(InputRequired::new().request(
                    "user_name",
                    "elicitation/create",
                    elicit("What is your name?", "name", "string"),
                ))),
            }
        },
    );
}

/// Asks `confirm` (a boolean); an accepted `true` deletes.
fn confirm_delete(ctx: &CallContext, filename: &str) -> ToolOutcome {
    let Some(answer) = response(ctx, "confirm") else {
        let message = format!("Delete {filename}?");
        return Ok(Outcome::InputRequired(InputRequired::new().request(
            "confirm",
            "elicitation/create",
            elicit(&message, "confirm", "boolean"),
        )));
    };
    let confirmed = answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/confirm").and_then(Value::as_bool) == Some(true);
    let verdict = if confirmed { "Deleted" } else { "Kept" };
    Ok(CallToolResult::text(format!("{verdict} {filename}")).into())
}

/// Asks `name` and `confirm` in one round (two keys pending at once); completes with both.
fn multi_input(ctx: &CallContext) -> ToolOutcome {
    match (response(ctx, "name"), response(ctx, "confirm")) {
        (Some(name), Some(_)) => {
            let name = accepted(name, "name").unwrap_or("stranger");
            Ok(CallToolResult::text(format!("Thanks, {name}: both answers received")).into())
        }
        _ => Ok(Outcome::InputRequired(
            InputRequired::new()
                .request("name", "elicitation/create", elicit("What is your name?", "name", "string"))
                .request("confirm", "elicitation/create", elicit("Shall I go on?", "confirm", "boolean")),
        )),
    }
}

/// A string field of an accepted elicitation.
fn accepted<'a>(answer: &'a Value, field: &str) -> Option<&'a str> {
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    answer.get("content")?.get(field)?.as_str()
}
