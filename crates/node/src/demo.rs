//! The demo catalog the node serves: a few tools, resources and prompts that show the
//! framework's features. Real deployments embed `mcp-fleet-server` with their own catalog.

use mcp_fleet_server::types::{
    CallToolResult, Content, GetPromptResult, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role, Tool,
};
use mcp_fleet_server::{InputRequired, McpServer, Outcome};
use serde_json::{Map, Value, json};

/// Build the demo server.
pub(crate) fn demo_server() -> McpServer {
    let server = McpServer::builder("mcp-fleet-demo", env!("CARGO_PKG_VERSION"))
        .instructions("Demo tools of an mcp-fleet node. Use echo to test round trips.")
        .build();
    server.tool(
        Tool::new("echo", "Echoes the given text").input_schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to echo"}},
            "required": ["text"]
        })),
        |call| async move {
            let text = call.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(CallToolResult::text(text))
        },
    );
    server.tool(
        Tool::new("add", "Adds two integers")
            .input_schema(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }))
            .output_schema(json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]})),
        |call| async move {
            let arg = |k: &str| call.arguments.get(k).and_then(Value::as_i64).unwrap_or(0);
            let sum = arg("a").saturating_add(arg("b"));
            Ok(CallToolResult::structured(json!({"sum": sum})))
        },
    );
    server.tool(Tool::new("slow_count", "Counts to five with progress notifications"), |call| async move {
        for i in 1..=5 {
            call.ctx.progress(f64::from(i), Some(5.0), Some(&format!("step {i}/5"))).await;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Ok(CallToolResult::text("counted to 5"))
    });
    server.tool(
        Tool::new("confirm", "Asks the user to confirm an action").input_schema(json!({
            "type": "object",
            "properties": {"action": {"type": "string", "description": "What to confirm"}},
            "required": ["action"]
        })),
        |call| async move { Ok(confirm(&call.arguments, call.ctx.input_responses.as_ref())) },
    );
    server.resource(
        Resource::new("fleet://status", "status", "Status of this node", "application/json"),
        |read| async move {
            Ok(vec![ResourceContents::text(read.uri, "application/json", json!({"ok": true}).to_string())])
        },
    );
    let template = ResourceTemplate::new("fleet://items/{id}", "item", "One demo item by id", "text/plain");
    // The template literal above is well-formed, so registration cannot fail.
    let _ = server.resource_template(template, |read| async move {
        let id = read.variables.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(vec![ResourceContents::text(read.uri, "text/plain", format!("item {id}"))])
    });
    let greet = Prompt::new(
        "greet",
        "Greets someone by name",
        vec![PromptArgument::new("name").description("Who to greet").required(true)],
    );
    server.prompt(greet, |get| async move {
        let name = get.arguments.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let content = Content::text(format!("Say hello to {name}."));
        Ok(GetPromptResult {
            messages: vec![PromptMessage { role: Role::User, content }],
            ..GetPromptResult::default()
        })
    });
    server
}

/// `confirm`: the first round asks the user (an elicitation, which a 2026 client answers
/// with `inputResponses` on its retry and a 2025 client as a server-to-client request); the
/// retry reads the answer. Everything the retry needs is in its own arguments, so the round
/// trip may span replicas.
fn confirm(arguments: &Map<String, Value>, answers: Option<&Value>) -> Outcome<CallToolResult> {
    let action = arguments.get("action").and_then(Value::as_str).unwrap_or("the action");
    let Some(answer) = answers.and_then(|a| a.get("confirm")) else {
        let params = json!({
            "message": format!("Confirm: {action}?"),
            "requestedSchema": {
                "type": "object",
                "properties": {"confirmed": {"type": "boolean", "description": "Go ahead"}},
                "required": ["confirmed"]
            }
        });
        return Outcome::InputRequired(InputRequired::new().request("confirm", "elicitation/create", params));
    };
    let accepted = answer.get("action").and_then(Value::as_str) == Some("accept");
    let confirmed = answer.pointer("/content/confirmed").and_then(Value::as_bool) == Some(true);
    let verdict = if accepted && confirmed { "Confirmed" } else { "Not confirmed" };
    CallToolResult::text(format!("{verdict}: {action}")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirm_asks_first_then_reads_the_answer() {
        let args = json!({"action": "deploy"}).as_object().cloned().unwrap();
        let Outcome::InputRequired(asked) = confirm(&args, None) else { panic!("round 1 asks") };
        assert_eq!(asked.input_requests["confirm"]["method"], "elicitation/create");
        assert_eq!(asked.input_requests["confirm"]["params"]["message"], "Confirm: deploy?");
        let text = |answers: Value| match confirm(&args, Some(&answers)) {
            Outcome::Complete(result) => serde_json::to_value(&result.content).unwrap()[0]["text"].clone(),
            Outcome::InputRequired(_) => panic!("an answer completes"),
        };
        let yes = json!({"confirm": {"action": "accept", "content": {"confirmed": true}}});
        assert_eq!(text(yes), "Confirmed: deploy");
        assert_eq!(text(json!({"confirm": {"action": "decline"}})), "Not confirmed: deploy");
    }
}
