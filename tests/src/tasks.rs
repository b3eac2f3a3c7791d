//! The tasks extension's harness: a catalog of task tools ([`task_server`]), a client that
//! declares the extension on every request ([`TaskClient`]), and [`SeverableBus`], a real bus a
//! test can cut a node off from for good — the fleet's view of a replica that died.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_fleet_bus::testing::Awaiting;
use mcp_fleet_bus::{BoxFuture, BusError, BusStream, Keyspace, Record, ServerEventBus};
use mcp_fleet_server::types::{CallToolResult, Tool};
use mcp_fleet_server::{HandlerOptions, InputRequired, McpServer, Outcome, catalog::TaskSupport, tasks::TaskOptions};
use serde_json::{Value, json};

use crate::{ListenStream, McpClient, Reply, WAIT, test_server};

/// The extension's identifier.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The envelope of a client that declared the extension.
pub fn task_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS: {}}},
    })
}

/// A request body declaring the extension.
pub fn task_request(id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = task_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Options for task tests: quick task creation and polling, small bounds, and a drain that
/// waits a second for running tasks.
pub fn task_options() -> HandlerOptions {
    HandlerOptions::default().shutdown_deadline(Duration::from_secs(1)).tasks(
        TaskOptions::default()
            .create_after(Duration::from_millis(50))
            .poll_interval(Duration::from_millis(100))
            .status_interval(Duration::from_millis(20))
            .max_result_bytes(4096)
            .max_tasks_per_principal(3),
    )
}

/// [`test_server`] plus tools whose calls become tasks:
/// - `slow {ms}`: sleeps `ms` in ten steps, reporting "step i of 10"; a task when slow.
/// - `confirm`: a task at once, then asks `ok` (a boolean) through the task.
/// - `external`: required task, detached: completed through its handle only.
/// - `huge`: a task at once, whose result is over the tests' 4 KiB limit.
pub fn task_server() -> McpServer {
    let server = test_server();
    server.task_tool(
        Tool::new("slow", "Sleeps, reporting progress")
            .input_schema(json!({"type": "object", "properties": {"ms": {"type": "integer"}}})),
        TaskSupport::Optional,
        |call| async move {
            let ms = call.arguments.get("ms").and_then(Value::as_u64).unwrap_or(0);
            for step in 1..=10 {
                tokio::time::sleep(Duration::from_millis(ms / 10)).await;
                call.ctx.progress(f64::from(step), Some(10.0), Some(&format!("step {step} of 10"))).await;
            }
            Ok(CallToolResult::text(format!("slept {ms} ms")))
        },
    );
    server.task_tool(Tool::new("confirm", "Asks for confirmation as a task"), TaskSupport::Optional, |call| async move {
        call.ctx.run_as_task().await;
        let answer = call.ctx.input_responses.as_ref().and_then(|r| r.get("ok")).cloned();
        Ok::<_, mcp_fleet_server::RpcError>(match answer {
            Some(answer) => Outcome::Complete(CallToolResult::text(format!("confirmed: {}", answer["content"]["ok"]))),
            None => Outcome::InputRequired(InputRequired::new().request(
                "ok",
                "elicitation/create",
                json!({"message": "OK?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}),
            )),
        })
    });
    server.task_tool(
        Tool::new("external", "Hands its task to outside work"),
        TaskSupport::Required,
        |call| async move {
            let task = call.ctx.detach_task().await?;
            Ok(CallToolResult::text(format!("handed over {}", task.id())))
        },
    );
    server.task_tool(
        Tool::new("huge", "Answers more than a task may keep"),
        TaskSupport::Optional,
        |call| async move {
            call.ctx.run_as_task().await;
            Ok(CallToolResult::text("x".repeat(8192)))
        },
    );
    server
}

/// A client of one node that declares the extension, optionally as tenant `t` (the principal
/// `user@t` of [`crate::cluster::tenant_options`]).
#[derive(Clone)]
pub struct TaskClient {
    client: McpClient,
    tenant: Option<String>,
}

impl TaskClient {
    /// A client of `url`.
    pub fn new(url: String, tenant: Option<&str>) -> Self {
        TaskClient { client: McpClient::new(url), tenant: tenant.map(str::to_owned) }
    }

    /// POST `method` with `params` (envelope and headers added); the whole reply.
    pub async fn send(&self, method: &str, params: Value) -> Reply {
        let body = task_request(json!(1), method, params);
        let mut headers = McpClient::standard_headers(&body);
        headers.extend(self.tenant.iter().map(|t| ("x-tenant".to_owned(), t.clone())));
        self.client.post_with(&body, &headers).await
    }

    /// The JSON-RPC `result` of `method` (panics on an error).
    pub async fn result(&self, method: &str, params: Value) -> Value {
        let reply = self.send(method, params).await;
        let body = reply.messages().pop().unwrap_or_else(|| panic!("no message: {reply:?}"));
        body.get("result").cloned().unwrap_or_else(|| panic!("no result: {body}"))
    }

    /// The JSON-RPC error of `method`, if it answered one.
    pub async fn error(&self, method: &str, params: Value) -> Option<Value> {
        self.send(method, params).await.messages().pop()?.get("error").cloned()
    }

    /// Call `tool` with `arguments`; the `CreateTaskResult`'s id (panics if it is not a task).
    pub async fn start(&self, tool: &str, arguments: Value) -> String {
        let result = self.result("tools/call", json!({"name": tool, "arguments": arguments})).await;
        assert_eq!(result["resultType"], "task", "{result}");
        result["taskId"].as_str().expect("taskId").to_owned()
    }

    /// `tasks/get` of `id`.
    pub async fn get(&self, id: &str) -> Value {
        self.result("tasks/get", json!({"taskId": id})).await
    }

    /// Poll `id` until `done(task)` holds; panics after `within`, naming what the task was.
    pub async fn wait_until(&self, id: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let (waiting, mut last) = (Awaiting::new(format!("task {id} is done")), Value::Null);
        crate::eventually(&waiting, within, async || {
            last = self.get(id).await;
            waiting.saw(format_args!("{last}"));
            done(&last)
        })
        .await;
        last
    }

    /// Poll `id` until it has `status`.
    pub async fn wait_status(&self, id: &str, status: &str) -> Value {
        self.wait_until(id, WAIT, |t| t["status"] == status).await
    }

    /// Open a listen stream following `tasks` and read its acknowledgement.
    pub async fn listen(&self, tasks: &[&str]) -> ListenStream {
        let body = task_request(json!("listen"), "subscriptions/listen", json!({"notifications": {"taskIds": tasks}}));
        let mut headers = McpClient::standard_headers(&body);
        headers.extend(self.tenant.iter().map(|t| ("x-tenant".to_owned(), t.clone())));
        let resp = self.client.send_raw("POST", &headers, serde_json::to_vec(&body).expect("json")).await;
        let mut stream = ListenStream::from_response(resp);
        let ack = stream.next_message().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!(tasks), "{ack}");
        stream
    }
}

/// Read `stream` until a `notifications/tasks` for `id` satisfies `wanted`; panics after `within`.
pub async fn await_task_notification(
    stream: &mut ListenStream,
    id: &str,
    within: Duration,
    wanted: impl Fn(&Value) -> bool,
) -> Value {
    let read = async {
        loop {
            let msg = stream.next_message_within(within).await.expect("the stream ended");
            if msg["method"] == "notifications/tasks" && msg["params"]["taskId"] == id && wanted(&msg["params"]) {
                return msg;
            }
        }
    };
    tokio::time::timeout(within, read).await.unwrap_or_else(|_| panic!("no matching notification for {id}"))
}

/// A bus a test can cut its node off from: until [`SeverableBus::sever`], the wrapped bus;
/// after, every operation fails and the subscription ends — the node can neither announce
/// itself (its membership expires) nor read or write the fleet's state, as a replica that died.
#[derive(Clone)]
pub struct SeverableBus {
    inner: Arc<dyn ServerEventBus>,
    severed: Arc<AtomicBool>,
}

impl SeverableBus {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn ServerEventBus>) -> Self {
        SeverableBus { inner, severed: Arc::default() }
    }

    /// Cut the node off for good.
    pub fn sever(&self) {
        self.severed.store(true, Ordering::Release);
    }

    fn check(severed: &AtomicBool) -> Result<(), BusError> {
        if severed.load(Ordering::Acquire) { Err(BusError::Unavailable("severed by the test".into())) } else { Ok(()) }
    }
}

/// Run `op` unless the bus is severed.
fn unless<'a, T: Send + 'a>(
    severed: &'a AtomicBool,
    op: impl Future<Output = Result<T, BusError>> + Send + 'a,
) -> BoxFuture<'a, Result<T, BusError>> {
    Box::pin(async move {
        SeverableBus::check(severed)?;
        op.await
    })
}

impl ServerEventBus for SeverableBus {
    fn publish_event(
        &self,
        event: mcp_fleet_bus::EventEnvelope,
    ) -> BoxFuture<'_, Result<mcp_fleet_bus::EventEnvelope, BusError>> {
        unless(&self.severed, self.inner.publish_event(event))
    }

    fn subscribe(&self) -> BoxFuture<'_, Result<BusStream, BusError>> {
        let severed = self.severed.clone();
        unless(&self.severed, async move {
            use futures_util::StreamExt;
            let stream = self.inner.subscribe().await?;
            let live: BusStream =
                Box::pin(stream.take_while(move |_| std::future::ready(!severed.load(Ordering::Acquire))));
            Ok(live)
        })
    }

    fn status(&self) -> mcp_fleet_bus::BusStatus {
        match self.severed.load(Ordering::Acquire) {
            true => mcp_fleet_bus::BusStatus::Reconnecting { last_error: "severed by the test".into() },
            false => self.inner.status(),
        }
    }

    fn announce(&self, payload: String, ttl: Duration) -> BoxFuture<'_, Result<(), BusError>> {
        unless(&self.severed, self.inner.announce(payload, ttl))
    }

    fn members(&self) -> BoxFuture<'_, Result<Vec<mcp_fleet_bus::Member>, BusError>> {
        unless(&self.severed, self.inner.members())
    }

    fn leave(&self) -> BoxFuture<'_, Result<(), BusError>> {
        unless(&self.severed, self.inner.leave())
    }

    fn keyspace(&self, name: &str, ttl: Duration) -> BoxFuture<'_, Result<Arc<dyn Keyspace>, BusError>> {
        let severed = self.severed.clone();
        let opening = self.inner.keyspace(name, ttl);
        unless(&self.severed, async move {
            let inner = opening.await?;
            Ok(Arc::new(SeverableKeyspace { inner, severed }) as Arc<dyn Keyspace>)
        })
    }

    fn node_id(&self) -> &str {
        self.inner.node_id()
    }

    fn counters(&self) -> Arc<mcp_fleet_bus::BusCounters> {
        self.inner.counters()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

/// A keyspace of a [`SeverableBus`].
struct SeverableKeyspace {
    inner: Arc<dyn Keyspace>,
    severed: Arc<AtomicBool>,
}

impl Keyspace for SeverableKeyspace {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Record>, BusError>> {
        unless(&self.severed, self.inner.get(key))
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        unless(&self.severed, self.inner.create(key, value))
    }

    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<u64, BusError>> {
        unless(&self.severed, self.inner.put(key, value))
    }

    fn compare_and_set<'a>(
        &'a self,
        key: &'a str,
        expected: u64,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<Option<u64>, BusError>> {
        unless(&self.severed, self.inner.compare_and_set(key, expected, value))
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        unless(&self.severed, self.inner.delete(key))
    }

    fn increment<'a>(&'a self, key: &'a str, delta: i64) -> BoxFuture<'a, Result<i64, BusError>> {
        unless(&self.severed, self.inner.increment(key, delta))
    }

    fn hold_slot<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        ttl: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        unless(&self.severed, self.inner.hold_slot(key, member, ttl, limit))
    }

    fn release_slot<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        unless(&self.severed, self.inner.release_slot(key, member))
    }

    fn live_slots<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<usize, BusError>> {
        unless(&self.severed, self.inner.live_slots(key))
    }

    fn ttl(&self) -> Duration {
        self.inner.ttl()
    }
}
