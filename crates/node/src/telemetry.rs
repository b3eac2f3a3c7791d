//! The node's `tracing` subscriber: the log layer it always had (text or JSON, filtered by
//! `RUST_LOG`, default `info`), plus — only with `--otlp-endpoint` — an OpenTelemetry layer
//! that exports the server's spans over OTLP/HTTP; and the flush of that exporter at exit.
//!
//! The two layers split the server's spans by their target ([`TARGET`], see
//! `mcp_fleet_server::trace`): the log layer never sees them (unless `RUST_LOG` names the
//! target), the export layer sees only them. Without `--otlp-endpoint` no layer enables the
//! target, so `tracing` disables those callsites once and for all: tracing costs nothing.
//!
//! Export: a batch span processor (its own thread; the `OTEL_BSP_*` variables) feeding the
//! OTLP/HTTP exporter (`http/protobuf` by default, `http/json` through
//! `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`; gRPC and TLS are not built in, to keep the build
//! small: run a collector or agent next to the node). The resource is `service.name =
//! mcp-fleet`, `service.version`, `service.instance.id = <node id>`, overridden by
//! `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`. Incoming trace context is always W3C
//! (what MCP's `_meta` and the bus envelope carry), read by the server itself.
//!
//! Logs: with `--otlp-endpoint` the audit records (see `crate::audit`) are exported as OTel
//! log records too, through a batch log processor and the same exporter settings
//! (`/v1/logs`, the `OTEL_BLRP_*` variables). The node's own log lines are not exported.

use std::time::Duration;

use mcp_fleet_bus::redact::{redact_headers, redact_url};
use mcp_fleet_server::trace::TARGET;
use opentelemetry::KeyValue;
use opentelemetry::logs::LoggerProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{LogExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::resource::{EnvResourceDetector, TelemetryResourceDetector};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How long the exit may wait for the last spans to reach the collector.
const FLUSH_DEADLINE: Duration = Duration::from_secs(5);

/// The protocol variables, the signal-specific one first (OTLP exporter specification).
const PROTOCOL_VARS: [&str; 2] = ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"];

/// The header variables, in the same order: the exporter reads them itself; the node only
/// names the headers in its start-up line, never their values (API keys travel there).
const HEADER_VARS: [&str; 2] = ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"];

/// Why telemetry could not be set up; the node does not start without it.
#[derive(thiserror::Error)]
pub(crate) enum TelemetryError {
    /// The endpoint is not a plain-HTTP URL (held redacted: it may carry credentials).
    #[error("--otlp-endpoint {0:?}: expected an http:// URL (TLS is not built in; export to a local collector)")]
    Endpoint(String),
    /// A protocol other than OTLP/HTTP was asked for.
    #[error("{var}={value:?}: this build exports http/protobuf or http/json only")]
    Protocol {
        /// The variable that asked.
        var: &'static str,
        /// What it asked for.
        value: String,
    },
    /// The exporter rejected its configuration (an `OTEL_EXPORTER_OTLP_*` variable).
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Another subscriber was installed first.
    #[error("installing the tracing subscriber: {0}")]
    Install(#[from] tracing_subscriber::util::TryInitError),
}

/// The sentence, not the variant: `main` returns this error, and Rust prints a `main` error
/// with `Debug`.
impl std::fmt::Debug for TelemetryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The installed telemetry; [`Telemetry::shutdown`] flushes what is still queued.
pub(crate) struct Telemetry {
    provider: Option<SdkTracerProvider>,
    logs: Option<SdkLoggerProvider>,
}

/// One layer of the node's subscriber.
type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Install the subscriber: logs (JSON lines if `json`), and trace export to `otlp_endpoint`
/// when given, its resource naming `node_id`.
pub(crate) fn init(json: bool, otlp_endpoint: Option<&str>, node_id: &str) -> Result<Telemetry, TelemetryError> {
    let mut layers = vec![log_layer(json)];
    let (provider, logs) = match otlp_endpoint {
        Some(endpoint) => {
            let provider = tracer_provider(endpoint, node_id)?;
            layers.push(export_layer(&provider));
            (Some(provider), Some(logger_provider(endpoint, node_id)?))
        }
        None => (None, None),
    };
    tracing_subscriber::registry().with(layers).try_init()?;
    if let Some(endpoint) = otlp_endpoint {
        let headers = HEADER_VARS.iter().find_map(|var| std::env::var(var).ok()).map(|h| redact_headers(&h));
        let (endpoint, headers) = (redact_url(endpoint), headers.unwrap_or_default());
        tracing::info!(%endpoint, %headers, "exporting traces and audit records over OTLP/HTTP");
    }
    Ok(Telemetry { provider, logs })
}

impl Telemetry {
    /// Export the spans still queued and stop the exporter (within [`FLUSH_DEADLINE`]); call it
    /// outside the runtime, at exit.
    pub(crate) fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown_with_timeout(FLUSH_DEADLINE)
        {
            tracing::warn!(error = %e, "the last traces may not have been exported");
        }
        if let Some(logs) = self.logs
            && let Err(e) = logs.shutdown_with_timeout(FLUSH_DEADLINE)
        {
            tracing::warn!(error = %e, "the last audit records may not have been exported");
        }
    }

    /// The logger audit records are exported with, when `--otlp-endpoint` is given.
    pub(crate) fn audit_logger(&self) -> Option<SdkLogger> {
        self.logs.as_ref().map(|logs| logs.logger("mcp-fleet.audit"))
    }
}

/// The log layer, filtered by `RUST_LOG` ([`log_filter`]).
fn log_layer(json: bool) -> BoxedLayer {
    let filter = log_filter(std::env::var(EnvFilter::DEFAULT_ENV).ok().as_deref());
    let fmt = tracing_subscriber::fmt::layer();
    if json { fmt.json().with_filter(filter).boxed() } else { fmt.with_filter(filter).boxed() }
}

/// The directives of `rust_log` (`info` when absent or invalid), without the server's trace
/// spans unless they name their target.
fn log_filter(rust_log: Option<&str>) -> EnvFilter {
    let mut filter = rust_log.and_then(|d| EnvFilter::try_new(d).ok()).unwrap_or_else(|| "info".into());
    if !rust_log.is_some_and(|directives| directives.contains(TARGET)) {
        // A constant directive: it parses.
        if let Ok(off) = format!("{TARGET}=off").parse() {
            filter = filter.add_directive(off);
        }
    }
    filter
}

/// The export layer: the server's spans, and nothing else, into `provider`.
fn export_layer(provider: &SdkTracerProvider) -> BoxedLayer {
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("mcp-fleet"))
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_filter(Targets::new().with_target(TARGET, LevelFilter::TRACE))
        .boxed()
}

/// A batch-exporting tracer provider for the collector at `endpoint`.
fn tracer_provider(endpoint: &str, node_id: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter =
        SpanExporter::builder().with_http().with_endpoint(traces_url(endpoint)?).with_protocol(protocol()?).build()?;
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource(node_id)).build())
}

/// The audit records' logger provider: a batch log processor into the OTLP/HTTP exporter.
fn logger_provider(endpoint: &str, node_id: &str) -> Result<SdkLoggerProvider, TelemetryError> {
    let url = signal_url(endpoint, "/v1/logs")?;
    let exporter = LogExporter::builder().with_http().with_endpoint(url).with_protocol(protocol()?).build()?;
    Ok(SdkLoggerProvider::builder().with_batch_exporter(exporter).with_resource(resource(node_id)).build())
}

/// The traces URL of a collector base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` is read: the
/// signal path `/v1/traces` appended (unless already there).
fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    signal_url(endpoint, "/v1/traces")
}

/// A collector base URL with a signal's `path` appended (unless already there); a trailing
/// `/v1/traces` given for the traces names the same collector for the logs.
fn signal_url(endpoint: &str, path: &str) -> Result<String, TelemetryError> {
    let base = endpoint.trim().trim_end_matches('/');
    let host = base.strip_prefix("http://").filter(|rest| !rest.is_empty());
    if host.is_none() {
        return Err(TelemetryError::Endpoint(redact_url(endpoint)));
    }
    let base = base.strip_suffix("/v1/traces").unwrap_or(base);
    Ok(format!("{base}{path}"))
}

/// The OTLP protocol the environment asks for; `http/protobuf` when it asks for none.
fn protocol() -> Result<Protocol, TelemetryError> {
    for var in PROTOCOL_VARS {
        let Ok(value) = std::env::var(var) else { continue };
        return match value.trim() {
            "http/protobuf" => Ok(Protocol::HttpBinary),
            "http/json" => Ok(Protocol::HttpJson),
            _ => Err(TelemetryError::Protocol { var, value }),
        };
    }
    Ok(Protocol::HttpBinary)
}

/// The node's resource: defaults, then `OTEL_RESOURCE_ATTRIBUTES`, then `OTEL_SERVICE_NAME`
/// (each later one wins, as the SDK specification orders them).
fn resource(node_id: &str) -> Resource {
    let defaults = [
        KeyValue::new("service.name", "mcp-fleet"),
        KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
        KeyValue::new("service.instance.id", node_id.to_owned()),
    ];
    let builder = Resource::builder_empty()
        .with_attributes(defaults)
        .with_detector(Box::new(TelemetryResourceDetector))
        .with_detector(Box::new(EnvResourceDetector::new()));
    match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.trim().is_empty() => builder.with_service_name(name),
        _ => builder,
    }
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_base_url_and_gets_the_traces_path() {
        for (given, url) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://collector:4318/", "http://collector:4318/v1/traces"),
            ("http://collector:4318/otlp", "http://collector:4318/otlp/v1/traces"),
            ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
        ] {
            assert_eq!(traces_url(given).unwrap(), url, "{given}");
        }
        for refused in ["https://collector:4318", "collector:4318", "http://", ""] {
            assert!(matches!(traces_url(refused), Err(TelemetryError::Endpoint(_))), "{refused}");
        }
    }

    /// Whether a subscriber logging with `RUST_LOG=rust_log` builds the server's spans.
    fn traced_by_logs(rust_log: Option<&str>) -> bool {
        let subscriber =
            tracing_subscriber::registry().with(tracing_subscriber::fmt::layer().with_filter(log_filter(rust_log)));
        tracing::subscriber::with_default(subscriber, || !tracing::info_span!(target: TARGET, "request").is_disabled())
    }

    #[test]
    fn logs_leave_the_trace_spans_alone_unless_rust_log_names_them() {
        for rust_log in [None, Some("info"), Some("trace"), Some("debug,mcp_fleet=trace"), Some("not a filter")] {
            assert!(!traced_by_logs(rust_log), "{rust_log:?}");
        }
        assert!(traced_by_logs(Some("warn,mcp_fleet::trace=info")));
    }

    #[test]
    fn the_resource_names_the_service_and_the_node() {
        let resource = resource("node-7");
        let get = |key: &'static str| resource.get(&opentelemetry::Key::from_static_str(key)).map(|v| v.to_string());
        assert_eq!(get("service.instance.id").as_deref(), Some("node-7"));
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() && std::env::var_os("OTEL_RESOURCE_ATTRIBUTES").is_none() {
            assert_eq!(get("service.name").as_deref(), Some("mcp-fleet"));
        }
        assert!(get("telemetry.sdk.name").is_some());
    }
}
