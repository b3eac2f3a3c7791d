//! The `otel` feature against an in-memory exporter: which trace context a request span
//! adopts, what it records, and how a publish and its delivery are linked.

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

use crate::types::{CallToolResult, Tool};
use crate::{HandlerOptions, McpHandler, McpServer, create_mcp_handler};
use mcp_fleet_bus::testing::WAIT;

const META_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const META_SPAN: &str = "00f067aa0ba902b7";
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_SPAN: &str = "b7ad6b7169203331";

/// An exporter that keeps finished spans, behind a subscriber that is the default for this
/// thread while the guard lives (the tests run on a current-thread runtime).
struct Capture {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Capture {
    fn install() -> Capture {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        Capture { exporter, _provider: provider, _guard: guard }
    }

    fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().expect("finished spans")
    }

    /// The one finished span named `name`.
    fn span(&self, name: &str) -> SpanData {
        let spans = self.spans();
        let mut named = spans.iter().filter(|s| s.name == name);
        let span = named.next().unwrap_or_else(|| panic!("no span {name:?} in {:?}", names(&spans)));
        assert!(named.next().is_none(), "more than one span {name:?}");
        span.clone()
    }

    /// Wait for a span named `name` to finish.
    async fn finished(&self, name: &str) -> SpanData {
        let what = format!("a span {name:?} finishes");
        mcp_fleet_bus::testing::eventually(what, WAIT, async || self.spans().iter().any(|s| s.name == name)).await;
        self.span(name)
    }
}

fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.as_str().into_owned())
}

async fn handler() -> McpHandler {
    let server = McpServer::builder("unit", "0.1.0").build();
    server.tool(Tool::new("echo", "Echoes"), |_c| async { Ok(CallToolResult::text("echo")) });
    server.tool(Tool::new("fails", "Fails"), |_c| async { Ok(CallToolResult::error("no")) });
    create_mcp_handler(server, HandlerOptions::default()).await.expect("handler")
}

/// A `tools/call` of `tool`, with `extra_meta` merged into its `params._meta` and, if given,
/// a `traceparent` header.
fn call(tool: &str, extra_meta: Value, header: Option<&str>) -> Request<Full<Bytes>> {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    meta.as_object_mut().expect("object").extend(extra_meta.as_object().cloned().unwrap_or_default());
    let body =
        json!({"jsonrpc": "2.0", "id": "req-7", "method": "tools/call", "params": {"name": tool, "_meta": meta}});
    let mut req = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool);
    if let Some(header) = header {
        req = req.header("traceparent", header);
    }
    req.body(Full::new(Bytes::from(body.to_string()))).expect("request")
}

async fn send(h: &McpHandler, req: Request<Full<Bytes>>) -> http::StatusCode {
    let resp = h.handle(req).await;
    let status = resp.status();
    resp.into_body().collect().await.expect("body");
    status
}

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

#[tokio::test]
async fn the_meta_traceparent_is_the_request_spans_parent() {
    let capture = Capture::install();
    let h = handler().await;
    let meta = json!({"traceparent": traceparent(META_TRACE, META_SPAN), "tracestate": "rojo=00f067aa0ba902b7"});
    assert_eq!(send(&h, call("echo", meta, None)).await, 200);

    let span = capture.span("tools/call echo");
    assert_eq!(span.span_context.trace_id(), TraceId::from_hex(META_TRACE).unwrap());
    assert_eq!(span.parent_span_id, SpanId::from_hex(META_SPAN).unwrap());
    assert!(span.parent_span_is_remote);
    assert_eq!(span.span_context.trace_state().get("rojo"), Some("00f067aa0ba902b7"));
    assert_eq!(span.span_kind, SpanKind::Server);
    assert!(span.links.is_empty(), "no header context, nothing to link");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("jsonrpc.request.id", "req-7"),
        ("mcp.protocol.version", "2026-07-28"),
        ("network.protocol.name", "http"),
    ] {
        assert_eq!(attribute(&span, key).as_deref(), Some(value), "{key}");
    }
    assert_eq!(attribute(&span, "http.response.status_code").as_deref(), Some("200"));
    assert_eq!(attribute(&span, "error.type"), None);
    h.shutdown().await;
}

#[tokio::test]
async fn without_meta_context_the_header_is_the_parent_and_with_both_the_header_is_a_link() {
    let capture = Capture::install();
    let h = handler().await;
    let header = traceparent(HEADER_TRACE, HEADER_SPAN);
    assert_eq!(send(&h, call("echo", json!({}), Some(&header))).await, 200);
    let from_header = capture.span("tools/call echo");
    assert_eq!(from_header.span_context.trace_id(), TraceId::from_hex(HEADER_TRACE).unwrap());
    assert_eq!(from_header.parent_span_id, SpanId::from_hex(HEADER_SPAN).unwrap());

    capture.exporter.reset();
    let meta = json!({"traceparent": traceparent(META_TRACE, META_SPAN)});
    assert_eq!(send(&h, call("echo", meta, Some(&header))).await, 200);
    let both = capture.span("tools/call echo");
    assert_eq!(both.parent_span_id, SpanId::from_hex(META_SPAN).unwrap(), "_meta wins");
    let linked: Vec<_> = both.links.iter().map(|l| l.span_context.span_id()).collect();
    assert_eq!(linked, [SpanId::from_hex(HEADER_SPAN).unwrap()], "the transport's context is a link");
    h.shutdown().await;
}

#[tokio::test]
async fn errors_are_recorded_with_their_type() {
    let capture = Capture::install();
    let h = handler().await;
    assert_eq!(send(&h, call("fails", json!({}), None)).await, 200);
    let tool_error = capture.span("tools/call fails");
    assert_eq!(attribute(&tool_error, "error.type").as_deref(), Some("tool_error"));
    assert!(matches!(tool_error.status, Status::Error { .. }));

    capture.exporter.reset();
    assert_eq!(send(&h, call("missing", json!({}), None)).await, 200);
    let unknown = capture.span("tools/call missing");
    assert_eq!(attribute(&unknown, "error.type").as_deref(), Some("-32602"), "unknown tool: invalid params");
    assert_eq!(attribute(&unknown, "rpc.response.status_code").as_deref(), Some("-32602"));

    capture.exporter.reset();
    let refused = Request::post("/mcp").header("content-type", "text/plain").body(Full::new(Bytes::new())).unwrap();
    assert_eq!(h.handle(refused).await.status(), 415);
    let refusal = capture.span("mcp.request");
    assert_eq!(attribute(&refusal, "error.type").as_deref(), Some("415"));
    h.shutdown().await;
}

#[tokio::test]
async fn a_publish_carries_its_context_and_the_delivery_links_to_it() {
    let capture = Capture::install();
    let h = handler().await;
    let caller = tracing::info_span!(target: crate::trace::TARGET, "caller");
    let event = h.notify().tools_changed().instrument(caller).await.expect("published");

    let caller = capture.span("caller");
    let publish = capture.span("publish tools");
    assert_eq!(publish.parent_span_id, caller.span_context.span_id(), "a child of the current span");
    assert_eq!(publish.span_kind, SpanKind::Producer);
    assert_eq!(attribute(&publish, "messaging.message.id"), Some(event.event_id.clone()));
    assert_eq!(
        event.trace_parent,
        Some(traceparent(&publish.span_context.trace_id().to_string(), &publish.span_context.span_id().to_string())),
        "the envelope carries the publish span's context"
    );

    let delivery = capture.finished("process tools").await;
    assert_eq!(delivery.span_kind, SpanKind::Consumer);
    assert_eq!(delivery.parent_span_id, SpanId::INVALID, "a trace of its own");
    assert_ne!(delivery.span_context.trace_id(), publish.span_context.trace_id());
    let links: Vec<_> = delivery.links.iter().map(|l| (l.span_context.trace_id(), l.span_context.span_id())).collect();
    let publish_ids = (publish.span_context.trace_id(), publish.span_context.span_id());
    assert_eq!(links, [publish_ids], "linked to the publish");
    assert_eq!(attribute(&delivery, "mcp.method.name").as_deref(), Some("notifications/tools/list_changed"));
    h.shutdown().await;
}

#[tokio::test]
async fn a_subscriber_that_filters_the_target_out_traces_and_stamps_nothing() {
    // What the node installs without --otlp-endpoint: logs, with the trace target off.
    let logs_only = Targets::new().with_default(LevelFilter::TRACE).with_target(crate::trace::TARGET, LevelFilter::OFF);
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(logs_only));
    let h = handler().await;
    assert!(crate::trace::request_span(&http::HeaderMap::new(), http::Version::HTTP_11).is_disabled());
    let event = h.notify().tools_changed().await.expect("published");
    assert_eq!(event.trace_parent, None);
    h.shutdown().await;
}

#[tokio::test]
async fn a_catalog_change_carries_its_context_onto_the_bus() {
    let capture = Capture::install();
    let bus = std::sync::Arc::new(mcp_fleet_bus::MemoryBus::new());
    let mut raw = mcp_fleet_bus::ServerEventBus::subscribe(bus.as_ref()).await.expect("subscribe");
    let server = McpServer::builder("unit", "0.1.0").build();
    // Immediate mode publishes catalog changes on the bus (the fleet-converged default
    // announces revisions instead; each node then notifies its own streams).
    let options =
        HandlerOptions::default().bus(bus).catalog_notifications(crate::fleet::CatalogAnnouncePolicy::Immediate);
    let h = create_mcp_handler(server.clone(), options).await.expect("handler");
    tracing::info_span!(target: crate::trace::TARGET, "deploy").in_scope(|| {
        server.tool(Tool::new("late", "Registered later"), |_c| async { Ok(CallToolResult::text("late")) });
    });

    let event = mcp_fleet_bus::testing::next_event(&mut raw).await;
    let publish = capture.span("publish tools");
    assert_eq!(publish.parent_span_id, capture.span("deploy").span_context.span_id());
    let stamped =
        traceparent(&publish.span_context.trace_id().to_string(), &publish.span_context.span_id().to_string());
    assert_eq!(event.trace_parent, Some(stamped), "the outbox publishes the announcement's context");
    h.shutdown().await;
}
