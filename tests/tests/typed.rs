//! The typed API over real HTTP: derived schemas (doc comments, serde attributes), every
//! result type, a deserialization failure naming its path, typed prompts and templates, the
//! `#[server]` macro, and the context a handler reaches (progress, cancellation, tenant).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_fleet_server::typed::{self, Json, NoArgs, ToolError};
use mcp_fleet_server::types::{CallToolResult, ResourceContents};
use mcp_fleet_server::{CallContext, HandlerOptions, McpServer, RpcError, ServerError, catalog::ResourceRead, server};
use mcp_fleet_tests::{McpClient, TestNode, request};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Arguments with the serde attributes the schema must follow.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Search {
    /// Words to look for.
    query_text: String,
    /// How many results at most.
    #[serde(default = "ten")]
    max_results: u32,
    /// Only orders of this customer.
    customer: Option<String>,
}

fn ten() -> u32 {
    10
}

#[derive(Serialize, JsonSchema)]
struct Hits {
    total: u32,
    first: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    lines: Vec<Line>,
}

#[derive(Deserialize, JsonSchema)]
struct Line {
    qty: u32,
}

async fn search(args: Search) -> Json<Hits> {
    Json(Hits { total: args.max_results, first: args.customer.map(|c| format!("{c}: {}", args.query_text)) })
}

fn typed_server() -> McpServer {
    let server = McpServer::builder("typed", "1").build();
    server.add(typed::tool("search", "Searches orders", search).read_only()).unwrap();
    server
        .add(typed::tool("count", "Counts order lines", |o: Order| async move {
            o.lines.iter().map(|l| l.qty).sum::<u32>().to_string()
        }))
        .unwrap();
    server.add(typed::tool("square", "Squares a number", |_: NoArgs| async { Json(49_i64) })).unwrap();
    server
        .add(typed::tool("fail", "Always fails", |_: NoArgs| async {
            Err::<String, _>(ToolError::new("the warehouse is closed"))
        }))
        .unwrap();
    server
        .add(typed::tool("refuse", "Refuses with a protocol error", |_: NoArgs| async {
            Err::<String, _>(RpcError::invalid_params("not today"))
        }))
        .unwrap();
    server
        .add(typed::tool("parse", "Parses a number", |p: Parse| async move {
            let n: i64 = p.text.parse()?;
            Ok::<_, ToolError>(CallToolResult::text((n * 2).to_string()))
        }))
        .unwrap();
    server
}

#[derive(Deserialize, JsonSchema)]
struct Parse {
    text: String,
}

async fn call(client: &McpClient, name: &str, arguments: Value) -> Value {
    client.result("tools/call", json!({"name": name, "arguments": arguments})).await
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()
}

#[tokio::test]
async fn a_typed_tool_lists_its_derived_schemas_with_serde_attributes_and_doc_comments() {
    let node = TestNode::start(typed_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let list = client.result("tools/list", json!({})).await;
    let search = tool(&list, "search");
    let input = &search["inputSchema"];
    assert_eq!(input["type"], "object");
    assert_eq!(input["properties"]["queryText"]["description"], "Words to look for.");
    assert_eq!(input["properties"]["maxResults"]["default"], 10);
    assert_eq!(input["required"], json!(["queryText"]), "defaults and Options are not required");
    assert_eq!(input["additionalProperties"], false, "deny_unknown_fields");
    assert_eq!(search["outputSchema"]["properties"]["total"]["type"], "integer");
    assert_eq!(search["annotations"]["readOnlyHint"], true);
    let square = tool(&list, "square");
    assert_eq!(square["inputSchema"]["properties"], json!({}));
    assert_eq!(square["outputSchema"]["properties"]["result"]["type"], "integer", "a scalar is wrapped");
    node.shutdown().await;
}

#[tokio::test]
async fn each_result_type_becomes_its_wire_result() {
    let node = TestNode::start(typed_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let hits = call(&client, "search", json!({"queryText": "tea", "customer": "ada"})).await;
    assert_eq!(hits["structuredContent"], json!({"total": 10, "first": "ada: tea"}));
    assert_eq!(
        serde_json::from_str::<Value>(hits["content"][0]["text"].as_str().unwrap()).unwrap(),
        hits["structuredContent"]
    );
    let square = call(&client, "square", json!({})).await;
    assert_eq!(square["structuredContent"], json!({"result": 49}));
    assert_eq!(call(&client, "count", json!({"lines": [{"qty": 2}, {"qty": 3}]})).await["content"][0]["text"], "5");
    let failed = call(&client, "fail", json!({})).await;
    assert_eq!(
        (failed["isError"].clone(), failed["content"][0]["text"].clone()),
        (json!(true), json!("the warehouse is closed"))
    );
    let parsed = call(&client, "parse", json!({"text": "x"})).await;
    assert_eq!(parsed["isError"], true, "a ParseIntError through ? is the tool's failure");
    assert_eq!(call(&client, "parse", json!({"text": "21"})).await["content"][0]["text"], "42");
    let refused =
        client.post(&request(json!(9), "tools/call", json!({"name": "refuse", "arguments": {}}))).await.json();
    assert_eq!(
        (refused["error"]["code"].clone(), refused["error"]["message"].clone()),
        (json!(-32602), json!("not today"))
    );
    node.shutdown().await;
}

#[tokio::test]
async fn arguments_that_do_not_fit_the_type_are_an_error_result_naming_the_path() {
    let node = TestNode::start(typed_server(), HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let bad = call(&client, "count", json!({"lines": [{"qty": 1}, {"qty": -4}]})).await;
    assert_eq!(bad["isError"], true);
    let text = bad["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Invalid arguments at /lines/1/qty"), "{text}");
    let unknown = call(&client, "search", json!({"queryText": "a", "colour": "red"})).await;
    assert_eq!(unknown["isError"], true, "deny_unknown_fields is enforced");
    node.shutdown().await;
}

/// What the deserializer alone catches (the schema check passes): the error names the path.
#[tokio::test]
async fn a_deserialization_failure_past_the_schema_names_its_path() {
    #[derive(Deserialize, JsonSchema)]
    struct Strict {
        #[schemars(with = "String")]
        #[serde(deserialize_with = "no_dashes")]
        code: String,
    }
    fn no_dashes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let code = String::deserialize(d)?;
        match code.contains('-') {
            true => Err(serde::de::Error::custom("a code has no dashes")),
            false => Ok(code),
        }
    }
    let server = McpServer::builder("s", "1").build();
    server.add(typed::tool("strict", "Checks a code", |s: Strict| async move { s.code })).unwrap();
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let bad = call(&client, "strict", json!({"code": "a-b"})).await;
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["content"][0]["text"], "Invalid arguments at /code: a code has no dashes");
    node.shutdown().await;
}

#[derive(Deserialize, JsonSchema)]
struct Review {
    /// The language of the change.
    #[schemars(title = "Language")]
    language: String,
    /// How many findings at most.
    max_findings: Option<u32>,
    /// Whether to be strict.
    #[serde(default)]
    strict: bool,
}

#[derive(Deserialize, JsonSchema)]
struct OrderLine {
    order: u64,
    line: u32,
}

#[tokio::test]
async fn typed_prompts_parse_the_wire_strings_and_list_their_arguments() {
    let server = McpServer::builder("s", "1").build();
    server
        .add(
            typed::prompt("review", "Reviews a change", |r: Review| async move {
                format!("{} {} {}", r.language, r.max_findings.unwrap_or(5), r.strict)
            })
            .title("Code review"),
        )
        .unwrap();
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let listed = client.result("prompts/list", json!({})).await;
    assert_eq!(
        listed["prompts"][0]["arguments"],
        json!([
            {"name": "language", "title": "Language", "description": "The language of the change.", "required": true},
            {"name": "max_findings", "description": "How many findings at most.", "required": false},
            {"name": "strict", "description": "Whether to be strict.", "required": false},
        ])
    );
    let got = client
        .result(
            "prompts/get",
            json!({"name": "review", "arguments": {"language": "rust", "max_findings": "3", "strict": "true"}}),
        )
        .await;
    assert_eq!(got["messages"][0]["content"]["text"], "rust 3 true");
    let bad = client
        .post(&request(
            json!(2),
            "prompts/get",
            json!({"name": "review", "arguments": {"language": "rust", "max_findings": "many"}}),
        ))
        .await
        .json();
    assert_eq!(bad["error"]["code"], -32602);
    assert!(bad["error"]["message"].as_str().unwrap().contains("at /max_findings"), "{bad}");
    node.shutdown().await;
}

#[tokio::test]
async fn typed_templates_parse_their_variables() {
    let server = McpServer::builder("s", "1").build();
    server
        .add(
            typed::template("orders://{order}/lines/{line}", "line", |at: OrderLine, read: ResourceRead| async move {
                ResourceContents::text(read.uri, "text/plain", format!("{}", at.order * 100 + u64::from(at.line)))
            })
            .mime_type("text/plain"),
        )
        .unwrap();
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let read = client.result("resources/read", json!({"uri": "orders://7/lines/3"})).await;
    assert_eq!(read["contents"][0]["text"], "703");
    let bad = client.post(&request(json!(3), "resources/read", json!({"uri": "orders://x/lines/3"}))).await.json();
    assert_eq!(bad["error"]["code"], -32602);
    assert!(bad["error"]["message"].as_str().unwrap().contains("at /order"), "{bad}");
    node.shutdown().await;
}

#[test]
fn registration_refuses_duplicates_non_objects_and_mismatched_templates() {
    let server = McpServer::builder("s", "1").build();
    server.add(typed::tool("a", "A", |_: NoArgs| async { "a" })).unwrap();
    let again = server.add(typed::tool("a", "A again", |_: NoArgs| async { "b" }));
    assert!(matches!(again, Err(ServerError::Duplicate { .. })), "never a silent replacement");
    let scalar = server.add(typed::tool("n", "N", |n: i64| async move { n.to_string() }));
    assert!(
        matches!(&scalar, Err(ServerError::Definition(m)) if m.contains("not a JSON object")),
        "{:?}",
        scalar.err()
    );
    let typo =
        server.add(typed::template("orders://{ordr}/lines/{line}", "t", |_: OrderLine, r: ResourceRead| async move {
            ResourceContents::text(r.uri, "text/plain", "")
        }));
    assert!(matches!(&typo, Err(ServerError::Definition(m)) if m.contains("{ordr}")), "{:?}", typo.err());
    let nested = server.add(typed::prompt("p", "P", |_: Order| async { String::new() }));
    assert!(matches!(&nested, Err(ServerError::Definition(m)) if m.contains("\"lines\"")), "{:?}", nested.err());
    let all = server.add_all([
        typed::tool("b", "B", |_: NoArgs| async { "b" }).into(),
        typed::tool("a", "A", |_: NoArgs| async { "a" }).into(),
    ]);
    assert!(all.is_err());
    assert!(server.add(typed::tool("b", "B", |_: NoArgs| async { "b" })).is_ok(), "a failed add_all added nothing");
}

#[derive(Default)]
struct Shop {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Greeting {
    who: String,
}

#[server]
impl Shop {
    /// Greets a customer.
    #[tool(read_only, idempotent, title = "Greeter")]
    async fn greet(&self, g: Greeting) -> String {
        format!("{} greets {}", self.name, g.who)
    }

    /// The caller's tenant.
    #[tool(name = "tenant", destructive = false)]
    async fn whose(&self, ctx: CallContext) -> String {
        ctx.tenant().unwrap_or("none").to_owned()
    }

    /// A welcome message.
    #[prompt]
    async fn welcome(&self, g: Greeting) -> String {
        format!("Welcome {}", g.who)
    }

    /// One shelf.
    #[resource(template = "shop://shelves/{who}", mime_type = "text/plain")]
    async fn shelf(&self, g: Greeting, read: ResourceRead) -> ResourceContents {
        ResourceContents::text(read.uri, "text/plain", g.who)
    }

    /// Not an entry: the macro leaves it alone.
    fn helper(&self) -> usize {
        self.name.len()
    }
}

#[tokio::test]
async fn the_server_macro_registers_what_the_typed_api_would() {
    let shop = Shop { name: "corner".into() };
    assert_eq!(shop.helper(), 6);
    let server = McpServer::builder("s", "1").build();
    let handles = server.add_all(shop.into_entries()).unwrap();
    assert_eq!(
        handles.iter().map(|h| h.key().to_owned()).collect::<Vec<_>>(),
        ["greet", "tenant", "welcome", "shop://shelves/{who}"]
    );
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let list = client.result("tools/list", json!({})).await;
    let greet = tool(&list, "greet");
    assert_eq!((greet["title"].clone(), greet["description"].clone()), (json!("Greeter"), json!("Greets a customer.")));
    assert_eq!(greet["annotations"], json!({"readOnlyHint": true, "idempotentHint": true}));
    assert_eq!(tool(&list, "tenant")["annotations"], json!({"destructiveHint": false}));
    assert_eq!(call(&client, "greet", json!({"who": "ada"})).await["content"][0]["text"], "corner greets ada");
    assert_eq!(call(&client, "tenant", json!({})).await["content"][0]["text"], "none");
    let got = client.result("prompts/get", json!({"name": "welcome", "arguments": {"who": "bo"}})).await;
    assert_eq!(got["messages"][0]["content"]["text"], "Welcome bo");
    assert_eq!(
        client.result("resources/read", json!({"uri": "shop://shelves/tea"})).await["contents"][0]["text"],
        "tea"
    );
    node.shutdown().await;
}

#[tokio::test]
async fn progress_reaches_the_client_and_cancellation_reaches_the_handler() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = cancelled.clone();
    let server = McpServer::builder("s", "1").build();
    server
        .add(typed::tool("steps", "Reports progress", |_: NoArgs, ctx: CallContext| async move {
            for step in 1..=3 {
                ctx.progress(f64::from(step), Some(3.0), None).await;
            }
            "done"
        }))
        .unwrap();
    server
        .add(typed::tool("wait", "Waits to be cancelled", move |_: NoArgs, ctx: CallContext| {
            let seen = seen.clone();
            async move {
                // The work a handler hands to another task hears the cancellation.
                tokio::spawn(async move {
                    ctx.cancelled().await;
                    seen.store(true, Ordering::SeqCst);
                });
                std::future::pending::<String>().await
            }
        }))
        .unwrap();
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let mut body = request(json!(1), "tools/call", json!({"name": "steps", "arguments": {}}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let messages = client.post(&body).await.sse_messages();
    let progress: Vec<_> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].clone())
        .collect();
    assert_eq!(progress, [json!(1.0), json!(2.0), json!(3.0)]);
    assert_eq!(messages.last().unwrap()["result"]["content"][0]["text"], "done");

    let mut body = request(json!(2), "tools/call", json!({"name": "wait", "arguments": {}}));
    body["params"]["_meta"]["progressToken"] = json!("w");
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.post(&body).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    call.abort(); // the client goes away: its response closes
    for _ in 0..50 {
        if cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(cancelled.load(Ordering::SeqCst), "ctx.cancelled() resolved when the client left");
    node.shutdown().await;
}

#[derive(Deserialize, JsonSchema)]
struct Contact {
    /// Where to write.
    email: String,
    /// How often.
    frequency: Frequency,
}

#[derive(Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "lowercase")]
enum Frequency {
    Daily,
    Weekly,
}

#[tokio::test]
async fn a_typed_elicitation_asks_for_a_derived_schema_and_reads_the_answer_as_the_type() {
    use mcp_fleet_server::typed::Elicited;
    use mcp_fleet_server::{InputRequired, Outcome};
    let server = McpServer::builder("s", "1").build();
    server
        .add(typed::tool("subscribe", "Subscribes", |_: NoArgs, ctx: CallContext| async move {
            Ok::<_, RpcError>(match typed::elicited::<Contact>(&ctx, "contact")? {
                Some(Elicited::Accepted(c)) => Outcome::Complete(format!("{} {:?}", c.email, c.frequency)),
                Some(Elicited::Declined) => Outcome::Complete("\"declined\"".to_owned()),
                Some(Elicited::Cancelled) => Outcome::Complete("cancelled".to_owned()),
                None => Outcome::InputRequired(InputRequired::new().request(
                    "contact",
                    "elicitation/create",
                    typed::elicitation::<Contact>("How do we reach you?"),
                )),
            })
        }))
        .unwrap();
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let call = |responses: Option<Value>| {
        let mut body = request(json!(1), "tools/call", json!({"name": "subscribe", "arguments": {}}));
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
        if let Some(responses) = responses {
            body["params"]["inputResponses"] = responses;
        }
        body
    };
    let first = client.post(&call(None)).await.json();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let asked = &first["result"]["inputRequests"]["contact"]["params"];
    assert_eq!(asked["message"], "How do we reach you?");
    let schema = &asked["requestedSchema"];
    assert_eq!(schema["properties"]["email"]["description"], "Where to write.");
    assert_eq!(schema["properties"]["frequency"]["enum"], json!(["daily", "weekly"]), "enums inlined: {schema}");
    assert!(schema.get("$defs").is_none() && schema.get("title").is_none(), "{schema}");
    let accepted = json!({"contact": {"action": "accept", "content": {"email": "a@b.c", "frequency": "weekly"}}});
    let done = client.post(&call(Some(accepted))).await.json();
    assert_eq!(done["result"]["content"][0]["text"], "a@b.c Weekly", "{done}");
    let declined = client.post(&call(Some(json!({"contact": {"action": "decline"}})))).await.json();
    assert_eq!(declined["result"]["content"][0]["text"], "\"declined\"", "{declined}");
    let bad = json!({"contact": {"action": "accept", "content": {"email": "a@b.c", "frequency": "hourly"}}});
    let refused = client.post(&call(Some(bad))).await.json();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("at /frequency"), "{refused}");
    node.shutdown().await;
}

#[tokio::test]
async fn typed_completers_answer_for_their_argument_and_advertise_completions() {
    let server = McpServer::builder("s", "1").build();
    server
        .add(typed::prompt("review", "Reviews", |r: Review| async move { r.language }).complete(
            "language",
            |prefix: String| async move {
                ["rust", "ruby", "go"]
                    .iter()
                    .filter(|l| l.starts_with(&prefix))
                    .map(|l| (*l).to_owned())
                    .collect::<Vec<_>>()
            },
        ))
        .unwrap();
    server
        .add(
            typed::template("orders://{order}/lines/{line}", "line", |at: OrderLine, read: ResourceRead| async move {
                ResourceContents::text(read.uri, "text/plain", at.line.to_string())
            })
            .complete(
                "order",
                |prefix: String, req: mcp_fleet_server::catalog::CompletionRequest| async move {
                    vec![format!("{prefix}0 for {}", req.argument)]
                },
            ),
        )
        .unwrap();
    let typo = server.add(
        typed::prompt("p2", "P", |r: Review| async move { r.language })
            .complete("lang", |_: String| async { Vec::<String>::new() }),
    );
    assert!(matches!(&typo, Err(ServerError::Definition(m)) if m.contains("\"lang\"")), "{:?}", typo.err());
    let node = TestNode::start(server, HandlerOptions::default()).await;
    let client = McpClient::new(node.url());
    let discover = client.result("server/discover", json!({})).await;
    assert_eq!(discover["capabilities"]["completions"], json!({}), "{discover}");
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let langs = client
        .result("completion/complete", complete(json!({"type": "ref/prompt", "name": "review"}), "language", "ru"))
        .await;
    assert_eq!(langs["completion"]["values"], json!(["rust", "ruby"]));
    let orders = client
        .result(
            "completion/complete",
            complete(json!({"type": "ref/resource", "uri": "orders://{order}/lines/{line}"}), "order", "4"),
        )
        .await;
    assert_eq!(orders["completion"]["values"], json!(["40 for order"]));
    let none = client
        .result("completion/complete", complete(json!({"type": "ref/prompt", "name": "review"}), "strict", "t"))
        .await;
    assert_eq!(none["completion"]["values"], json!([]), "an argument without a completer has none");
    node.shutdown().await;
}
