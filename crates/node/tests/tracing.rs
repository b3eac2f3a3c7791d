//! Tracing across the fleet, as an operator sees it in a tracing backend: two `mcp-fleet`
//! processes on one Redis bus export to a collector, and a change published on node A (inside
//! the caller's trace) shows up linked to the delivery it caused on node B.
//!
//! The collector is a hyper server in this test accepting OTLP/HTTP `POST /v1/traces`. The
//! nodes export the default protocol, `http/protobuf`, decoded with the `opentelemetry-proto`
//! types the exporter itself encodes with: the test checks the wire format operators get by
//! default, and reads ids as bytes rather than through JSON's hex-string mapping.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::Node;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_fleet_tests::McpClient;
use mcp_fleet_tests::cluster::{Broker, broker_or_skip, unique_name};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;
use tokio::net::TcpListener;

/// One exported span with its resource's string attributes.
#[derive(Clone)]
struct Exported {
    resource: HashMap<String, String>,
    span: Span,
}

/// Every span the collector received.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Exported>>>,
}

impl Collector {
    /// Serve OTLP/HTTP on a free loopback port; the endpoint to give the nodes.
    async fn start() -> (Collector, String) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the collector");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let collector = Collector::default();
        let accepting = collector.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let collector = accepting.clone();
                let service = hyper::service::service_fn(move |req| {
                    let collector = collector.clone();
                    async move { Ok::<_, std::convert::Infallible>(collector.receive(req).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        (collector, endpoint)
    }

    /// One export: a protobuf `ExportTraceServiceRequest`, answered with an empty response.
    async fn receive(&self, req: http::Request<Incoming>) -> http::Response<Full<Bytes>> {
        let path_ok = req.method() == http::Method::POST && req.uri().path() == "/v1/traces";
        let body = req.into_body().collect().await.expect("export body").to_bytes();
        let export = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
        assert!(path_ok, "exports go to POST /v1/traces");
        let mut spans = self.spans.lock().expect("spans");
        for resource_spans in export.resource_spans {
            let resource = resource_spans.resource.map(|r| strings(&r.attributes)).unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                spans.push(Exported { resource: resource.clone(), span });
            }
        }
        let mut resp = http::Response::new(Full::new(Bytes::new()));
        resp.headers_mut().insert("content-type", http::HeaderValue::from_static("application/x-protobuf"));
        resp
    }

    /// The one span named `name` exported by node `node_id`.
    fn span(&self, node_id: &str, name: &str) -> Exported {
        let spans = self.spans.lock().expect("spans");
        let node = Some(node_id);
        let mine: Vec<_> =
            spans.iter().filter(|e| e.resource.get("service.instance.id").map(String::as_str) == node).collect();
        let named: Vec<_> = mine.iter().filter(|e| e.span.name == name).collect();
        let exported: Vec<_> = mine.iter().map(|e| &e.span.name).collect();
        assert_eq!(named.len(), 1, "one {name:?} span from {node_id}; it exported {exported:?}");
        (*named[0]).clone()
    }
}

/// String-valued attributes as a map.
fn strings(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes
        .iter()
        .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some((kv.key.clone(), s.clone())),
            _ => None,
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Send `req` to an admin port; its status (`None` while the port does not answer).
async fn admin_request(admin: SocketAddr, mut req: http::Request<Full<Bytes>>) -> Option<u16> {
    let stream =
        tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(admin)).await.ok()?.ok()?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.ok()?;
    tokio::spawn(conn);
    req.headers_mut().insert("host", http::HeaderValue::from_static("admin"));
    let resp = tokio::time::timeout(Duration::from_secs(5), sender.send_request(req)).await.ok()?.ok()?;
    Some(resp.status().as_u16())
}

#[tokio::test]
async fn a_publish_on_one_node_is_linked_to_the_delivery_it_caused_on_another() {
    let Some(url) = broker_or_skip(Broker::Redis).await else { return };
    let redis = url.trim_start_matches("redis://").split('/').next().expect("host:port").to_owned();
    let bus = format!("redis://{redis}/0?stream=mcp-fleet-test:otel-{}", unique_name());
    let (collector, endpoint) = Collector::start().await;
    let (a_id, b_id) = (format!("node-a-{}", unique_name()), format!("node-b-{}", unique_name()));
    let node = |id: &str| Node::start(&["--bus", &bus, "--node-id", id, "--otlp-endpoint", &endpoint], None);
    let (mut a, mut b) = (node(&a_id), node(&b_id));
    a.ready().await;
    b.ready().await;

    let mut stream =
        McpClient::new(format!("http://{}/mcp", b.mcp)).listen(json!("l"), json!({"toolsListChanged": true})).await;
    let ack = stream.next_message().await.expect("acknowledged");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    // The caller's trace: a publish made on its behalf belongs to it.
    let trace_id = format!(
        "{:032x}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
    );
    let caller_span = "00f067aa0ba902b7";
    let notify = http::Request::post("/admin/notify")
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .body(Full::new(Bytes::from(json!({"kind": "tools"}).to_string())))
        .expect("request");
    assert_eq!(admin_request(a.admin, notify).await, Some(200), "published through node A");
    let notification = stream.next_message().await.expect("a notification on node B");
    assert_eq!(notification["method"], "notifications/tools/list_changed");
    drop(stream);

    // A clean exit has flushed its spans.
    for (name, node) in [("A", &mut a), ("B", &mut b)] {
        node.terminate();
        assert_eq!(node.exited(Duration::from_secs(15)).await, Some(0), "node {name} exits cleanly");
    }

    let admin = collector.span(&a_id, "POST /admin/notify").span;
    assert_eq!(
        (hex(&admin.trace_id), hex(&admin.parent_span_id)),
        (trace_id.clone(), caller_span.to_owned()),
        "the admin call joins the caller's trace"
    );
    let publish = collector.span(&a_id, "publish tools").span;
    assert_eq!(hex(&publish.trace_id), trace_id, "node A's publish is in the caller's trace");
    assert_eq!(publish.parent_span_id, admin.span_id, "inside the admin call");

    let Exported { resource, span: delivery } = collector.span(&b_id, "process tools");
    assert_ne!(hex(&delivery.trace_id), trace_id, "the delivery is a trace of its own");
    let links: Vec<_> = delivery.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect();
    assert_eq!(links, [(trace_id.clone(), hex(&publish.span_id))], "node B's delivery links to node A's publish");
    assert_eq!(resource.get("service.name").map(String::as_str), Some("mcp-fleet"));
    assert_eq!(resource.get("service.instance.id"), Some(&b_id));
    assert_eq!(strings(&delivery.attributes).get("mcp_fleet.event.origin"), Some(&a_id));

    let listen = collector.span(&b_id, "subscriptions/listen").span;
    assert_eq!(strings(&listen.attributes).get("mcp.method.name").map(String::as_str), Some("subscriptions/listen"));
}
