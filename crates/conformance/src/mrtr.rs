//! Multi round-trip requests (MRTR, spec digest §16): tools and a prompt that answer
//! `input_required` until the client has supplied what they asked for.
//!
//! Each round is an independent request that may land on any replica, so everything a later
//! round needs travels in `requestState`. The framework signs it (with
//! `HandlerOptions::request_state_key`), binds it to the method, target and caller, and
//! refuses a tampered or expired token with `-32602` before the handler runs; handlers see
//! only verified payloads in `ctx.request_state`. It also refuses malformed `inputResponses`
//! (MRTR-5) and input requests the client's capabilities do not cover (MRTR-3).

use mcp_fleet_server::RpcError;
use mcp_fleet_server::types::{CallToolResult, Content, GetPromptResult, PromptMessage, Role, Tool};
use mcp_fleet_server::{CallContext, InputRequired, McpServer, Outcome};
use serde_json::{Value, json};

type ToolOutcome = Result<Outcome<CallToolResult>, RpcError>;

pub(crate) fn register(server: &McpServer) {
    let tool = |name: &str, description: &str| Tool::new(name, description);
    server
        .tool(tool("test_input_required_result_elicitation", "Asks the user's name by elicitation"), |c| async move {
            elicitation(&c.ctx)
        });
    server.tool(tool("test_input_required_result_sampling", "Asks the client's model a question"), |c| async move {
        sampling(&c.ctx)
    });
    server.tool(tool("test_input_required_result_list_roots", "Asks for the client's roots"), |c| async move {
        list_roots(&c.ctx)
    });
    server.tool(
        tool("test_input_required_result_request_state", "Asks for confirmation, carrying state"),
        |c| async move { confirm_with_state(&c.ctx, "request_state", "state-ok: confirmed") },
    );
    server
        .tool(tool("test_input_required_result_multiple_inputs", "Asks three inputs of three kinds"), |c| async move {
            multiple_inputs(&c.ctx)
        });
    server.tool(
        tool("test_input_required_result_multi_round", "Asks name, then colour, in two rounds"),
        |c| async move { multi_round(&c.ctx) },
    );
    server.tool(tool("test_input_required_result_tampered_state", "Refuses a tampered requestState"), |c| async move {
        confirm_with_state(&c.ctx, "tampered_state", "Confirmed with untampered state")
    });
    server.tool(
        tool("test_input_required_result_capabilities", "Asks only what the client can answer"),
        |c| async move { capabilities(&c.ctx) },
    );
    let prompt = mcp_fleet_server::types::Prompt::new(
        "test_input_required_result_prompt",
        "A prompt that asks the user for context first",
        Vec::new(),
    );
    server.prompt(prompt, |get| async move { prompt_with_context(&get.ctx) });
}

/// Round 1 asks `user_name`; any answer completes. No `requestState`: the suite retries
/// without one. Answers under other keys are ignored, so wrong keys only re-ask (MRTR-5).
fn elicitation(ctx: &CallContext) -> ToolOutcome {
    match response(ctx, "user_name") {
        Some(answer) => Ok(text(format!("Hello, {}!", accepted(answer, "name").unwrap_or("stranger")))),
        None => Ok(ask(InputRequired::new().request(
            "user_name",
            "elicitation/create",
            elicit("What is your name?", "name", "string"),
        ))),
    }
}

fn sampling(ctx: &CallContext) -> ToolOutcome {
    match response(ctx, "capital_question") {
        Some(answer) => Ok(text(format!("The model answered: {}", sampled_text(answer)))),
        None => Ok(ask(InputRequired::new().request(
            "capital_question",
            "sampling/createMessage",
            sample("What is the capital of France?", 100),
        ))),
    }
}

fn list_roots(ctx: &CallContext) -> ToolOutcome {
    match response(ctx, "client_roots") {
        Some(answer) => Ok(text(format!("Client roots: {}", root_uris(answer)))),
        None => Ok(ask(InputRequired::new().request("client_roots", "roots/list", json!({})))),
    }
}

/// Completes only with both the answer and the (verified) state round 1 issued; otherwise
/// asks again with fresh state. A tampered token never gets here.
fn confirm_with_state(ctx: &CallContext, fixture: &str, done: &str) -> ToolOutcome {
    let state = json!({"fixture": fixture, "asked": "confirm"});
    match response(ctx, "confirm") {
        Some(answer) if ctx.request_state.as_ref() == Some(&state) => {
            let ok = answer.pointer("/content/ok").cloned().unwrap_or(Value::Null);
            Ok(text(format!("{done} (ok = {ok})")))
        }
        _ => {
            let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
            let params = json!({"message": "Please confirm", "requestedSchema": schema});
            Ok(ask(InputRequired::new().request("confirm", "elicitation/create", params).state(state)))
        }
    }
}

fn multiple_inputs(ctx: &CallContext) -> ToolOutcome {
    let state = json!({"fixture": "multiple_inputs"});
    let answers = (response(ctx, "user_name"), response(ctx, "greeting"), response(ctx, "client_roots"));
    if let (Some(name), Some(greeting), Some(roots)) = answers
        && ctx.request_state.as_ref() == Some(&state)
    {
        let name = accepted(name, "name").unwrap_or("stranger");
        let summary = format!("{} {name}! Roots: {}", sampled_text(greeting), root_uris(roots));
        return Ok(text(summary));
    }
    Ok(ask(InputRequired::new()
        .request("user_name", "elicitation/create", elicit("What is your name?", "name", "string"))
        .request("greeting", "sampling/createMessage", sample("Generate a greeting", 50))
        .request("client_roots", "roots/list", json!({}))
        .state(state)))
}

/// Two rounds of questions; round 2's state carries round 1's answer, so it differs.
fn multi_round(ctx: &CallContext) -> ToolOutcome {
    let step = ctx.request_state.as_ref().and_then(|s| s.get("step")).and_then(Value::as_u64);
    let ask_step1 = || {
        let params = elicit("Step 1: What is your name?", "name", "string");
        ask(InputRequired::new().request("step1", "elicitation/create", params).state(json!({"step": 1})))
    };
    let ask_step2 = |name: &str| {
        let params = elicit("Step 2: What is your favorite color?", "color", "string");
        let state = json!({"step": 2, "name": name});
        ask(InputRequired::new().request("step2", "elicitation/create", params).state(state))
    };
    Ok(match step {
        Some(2) => {
            let name = ctx.request_state.as_ref().and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or("");
            match response(ctx, "step2") {
                Some(answer) => {
                    let color = accepted(answer, "color").unwrap_or("no colour");
                    text(format!("Hello {name}, your favorite color is {color}."))
                }
                None => ask_step2(name),
            }
        }
        Some(1) => match response(ctx, "step1") {
            Some(answer) => ask_step2(accepted(answer, "name").unwrap_or("stranger")),
            None => ask_step1(),
        },
        _ => ask_step1(),
    })
}

/// Builds its questions from the capabilities the request declared (MRTR-3); with none, or
/// once answered, completes.
fn capabilities(ctx: &CallContext) -> ToolOutcome {
    if let Some(answers) = &ctx.input_responses {
        return Ok(text(format!("Received: {answers}")));
    }
    let declares = |cap: &str| ctx.meta.missing_capabilities(&json!({cap: {}})).is_none();
    let mut ir = InputRequired::new();
    if declares("elicitation") {
        ir = ir.request("elicit_input", "elicitation/create", elicit("Please provide a value", "value", "string"));
    }
    if declares("sampling") {
        ir = ir.request("sample_input", "sampling/createMessage", sample("Sample request", 50));
    }
    if ir.input_requests.is_empty() {
        return Ok(text("The client declared no input capabilities; nothing to ask"));
    }
    Ok(ask(ir))
}

fn prompt_with_context(ctx: &CallContext) -> Result<Outcome<GetPromptResult>, RpcError> {
    let Some(answer) = response(ctx, "user_context") else {
        let params = elicit("What context should the prompt use?", "context", "string");
        return Ok(ask(InputRequired::new().request("user_context", "elicitation/create", params)));
    };
    let context = accepted(answer, "context").unwrap_or("none");
    let message = PromptMessage { role: Role::User, content: Content::text(format!("Prompt with context: {context}")) };
    Ok(GetPromptResult { messages: vec![message], ..GetPromptResult::default() }.into())
}

/// An `elicitation/create` form asking for one required field.
pub(crate) fn elicit(message: &str, field: &str, field_type: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": field_type}}, "required": [field]}
    })
}

/// A `sampling/createMessage` with one user text message.
pub(crate) fn sample(question: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": question}}], "maxTokens": max_tokens})
}

/// The client's response under `key`, if this is a retry that has one (already checked to be
/// an object by the framework).
pub(crate) fn response<'a>(ctx: &'a CallContext, key: &str) -> Option<&'a Value> {
    ctx.input_responses.as_ref()?.get(key)
}

/// A string field of an accepted elicitation (`None` if declined, cancelled or absent).
fn accepted<'a>(answer: &'a Value, field: &str) -> Option<&'a str> {
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    answer.get("content")?.get(field)?.as_str()
}

/// The text of a `CreateMessageResult`, whose `content` is one block or (2025-11-25) an array
/// of blocks: the first text block's.
pub(crate) fn sampled_text(answer: &Value) -> &str {
    let block = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        single => single,
    };
    block.and_then(|b| b.get("text")).and_then(Value::as_str).unwrap_or("(no text)")
}

fn root_uris(answer: &Value) -> String {
    let roots = answer.get("roots").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let uris: Vec<&str> = roots.iter().filter_map(|r| r.get("uri").and_then(Value::as_str)).collect();
    if uris.is_empty() { "none".into() } else { uris.join(", ") }
}

fn text(message: impl Into<String>) -> Outcome<CallToolResult> {
    CallToolResult::text(message).into()
}

fn ask<T>(request: InputRequired) -> Outcome<T> {
    Outcome::InputRequired(request)
}
