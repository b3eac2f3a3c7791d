//! With `--otlp-endpoint`, every audit record also leaves as an OpenTelemetry log record
//! (OTLP/HTTP `POST /v1/logs`, the default `http/protobuf`): event `mcp_fleet.audit`, the
//! record's JSON as the body — its `traceId` the trace the caller's `traceparent` named — and
//! the method and outcome as attributes; flushed when the drained process exits.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::Node;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_fleet_tests::{McpClient, request};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// A collector keeping every log record exported to it (span exports are answered, ignored).
async fn collector() -> (Arc<Mutex<Vec<LogRecord>>>, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the collector");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let kept = logs.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let kept = kept.clone();
            let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
                let kept = kept.clone();
                async move {
                    let is_logs = req.uri().path() == "/v1/logs";
                    let body = req.into_body().collect().await.expect("export body").to_bytes();
                    if is_logs {
                        let export = ExportLogsServiceRequest::decode(body).expect("an OTLP logs export");
                        let records =
                            export.resource_logs.into_iter().flat_map(|r| r.scope_logs).flat_map(|s| s.log_records);
                        kept.lock().expect("logs").extend(records);
                    }
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::new())))
                }
            });
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
        }
    });
    (logs, endpoint)
}

#[tokio::test]
async fn audit_records_are_exported_as_otel_logs_in_the_callers_trace() {
    let (logs, endpoint) = collector().await;
    let mut node = Node::start(&["--node-id", "otel-audit", "--otlp-endpoint", &endpoint], None);
    node.ready().await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let body = request(json!(1), "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let mut headers = McpClient::standard_headers(&body);
    headers.push(("traceparent".into(), format!("00-{trace_id}-00f067aa0ba902b7-01")));
    let reply = McpClient::new(node.url()).post_with(&body, &headers).await.json();
    assert_eq!(reply["result"]["content"][0]["text"], "hi", "{reply}");
    node.terminate();
    assert_eq!(node.exited(Duration::from_secs(15)).await, Some(0), "a clean drain");

    let logs = logs.lock().expect("logs");
    assert_eq!(logs.len(), 1, "one record for one call");
    let log = &logs[0];
    assert_eq!(log.event_name, "mcp_fleet.audit");
    let Some(any_value::Value::StringValue(text)) = log.body.as_ref().and_then(|b| b.value.clone()) else {
        panic!("a string body: {log:?}");
    };
    let record: Value = serde_json::from_str(&text).expect("the record's JSON");
    assert_eq!(
        (&record["method"], &record["name"], &record["outcome"]),
        (&json!("tools/call"), &json!("echo"), &json!("ok"))
    );
    assert_eq!(record["node"], "otel-audit");
    assert_eq!(record["traceId"], trace_id, "the call's span is in the caller's trace");
    let attribute =
        |key: &str| log.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.clone()).and_then(|v| v.value);
    assert_eq!(attribute("mcp_fleet.outcome"), Some(any_value::Value::StringValue("ok".into())));
    assert_eq!(attribute("mcp.method.name"), Some(any_value::Value::StringValue("tools/call".into())));
}
