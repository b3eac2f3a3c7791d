//! Prompt fixtures (plain, with arguments, with an embedded resource, with an image) and
//! `completion/complete` for the arguments of `test_prompt_with_arguments`.
//! Missing required arguments need no code: the framework refuses them with `-32602`.

use mcp_fleet_server::types::{
    Content, GetPromptResult, Prompt, PromptArgument, PromptMessage, ResourceContents, Role,
};
use mcp_fleet_server::{McpServer, catalog::CompletionRef, catalog::CompletionValues};
use serde_json::{Map, Value};

use crate::PNG_BASE64;

pub(crate) fn register(server: &McpServer) {
    let simple = prompt("test_simple_prompt", "A prompt without arguments", &[])
        .title("Simple prompt")
        .icon(crate::icon())
        .meta("example.com/fixture", serde_json::json!(true));
    server.prompt(simple, |_get| async { Ok(messages(vec![Content::text("This is a simple prompt for testing.")])) });
    let with_args = prompt("test_prompt_with_arguments", "A prompt with two required arguments", &["arg1", "arg2"]);
    server.prompt(with_args, |get| async move {
        let (arg1, arg2) = (argument(&get.arguments, "arg1"), argument(&get.arguments, "arg2"));
        Ok(messages(vec![Content::text(format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]))
    });
    let embedded = prompt("test_prompt_with_embedded_resource", "A prompt embedding a resource", &["resourceUri"]);
    server.prompt(embedded, |get| async move {
        let uri = argument(&get.arguments, "resourceUri");
        let resource = ResourceContents::text(uri, "text/plain", "Embedded resource content for testing.");
        Ok(messages(vec![Content::Resource { resource }, Content::text("Please process the embedded resource above.")]))
    });
    server.prompt(prompt("test_prompt_with_image", "A prompt with an image", &[]), |_get| async {
        Ok(messages(vec![
            Content::Image { data: PNG_BASE64.into(), mime_type: "image/png".into() },
            Content::text("Please analyze the image above."),
        ]))
    });

    // Suggestions for the arguments of `test_prompt_with_arguments`, filtered by what the user
    // typed so far; nothing for anything else.
    server.completion(|req| async move {
        let candidates: &[&str] = match (&req.reference, req.argument.as_str()) {
            (CompletionRef::Prompt(name), "arg1") if name == "test_prompt_with_arguments" => {
                &["testValue1", "testValue2", "example"]
            }
            (CompletionRef::Prompt(name), "arg2") if name == "test_prompt_with_arguments" => &["testValue2", "other"],
            _ => &[],
        };
        let values = candidates.iter().filter(|c| c.starts_with(&req.value)).map(|c| (*c).to_owned()).collect();
        Ok(CompletionValues { values, ..CompletionValues::default() })
    });
}

/// A prompt whose `required` arguments are `args`.
fn prompt(name: &str, description: &str, args: &[&str]) -> Prompt {
    let arguments = args
        .iter()
        .map(|a| PromptArgument::new(*a).title(format!("The {a}")).description(format!("Value of {a}")).required(true))
        .collect();
    Prompt::new(name, description, arguments)
}

/// One user message per content block.
fn messages(content: Vec<Content>) -> GetPromptResult {
    let messages = content.into_iter().map(|content| PromptMessage { role: Role::User, content }).collect();
    GetPromptResult { messages, ..GetPromptResult::default() }
}

fn argument<'a>(arguments: &'a Map<String, Value>, name: &str) -> &'a str {
    // The framework checked required arguments are present and strings.
    arguments.get(name).and_then(Value::as_str).unwrap_or_default()
}
