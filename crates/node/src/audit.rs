//! The node's audit trail: `--audit-file PATH|-` (JSON lines to a file or stdout),
//! `--audit-arguments`, and — with `--otlp-endpoint` — [`OtelAuditSink`], which exports each
//! record as an OpenTelemetry log record. The records themselves, their queue and its bounds
//! are the server's (`mcp_fleet_server::audit::AuditOptions`).

use std::time::{Duration, UNIX_EPOCH};

use mcp_fleet_server::{audit::AuditOptions, audit::AuditRecord, audit::AuditSink};
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry_sdk::logs::SdkLogger;

use crate::config::Config;

/// The audit options the flags ask for; `None` (no audit) without `--audit-file` and without
/// an OTLP logger.
pub(crate) fn options(config: &Config, otel: Option<SdkLogger>) -> Option<AuditOptions> {
    let file = config.audit_file.as_ref().map(|path| match path.to_str() {
        Some("-") => AuditOptions::stdout(),
        _ => AuditOptions::file(path),
    });
    let options = match (file, otel) {
        (Some(file), Some(logger)) => file.also(OtelAuditSink { logger }),
        (Some(file), None) => file,
        (None, Some(logger)) => AuditOptions::sink(OtelAuditSink { logger }),
        (None, None) => return None,
    };
    Some(options.arguments(config.audit_arguments))
}

/// Audit records as OTel log records: event name `mcp_fleet.audit`, the record's JSON as the
/// body, and the fields a query filters on as attributes. `emit` hands the record to the
/// SDK's batch processor (its own thread, bounded queue): it never blocks on the collector.
pub(crate) struct OtelAuditSink {
    logger: SdkLogger,
}

impl AuditSink for OtelAuditSink {
    fn write(&self, record: &AuditRecord) -> std::io::Result<()> {
        let mut log = self.logger.create_log_record();
        log.set_event_name("mcp_fleet.audit");
        log.set_timestamp(UNIX_EPOCH + Duration::from_millis(record.time_ms));
        log.set_severity_number(Severity::Info);
        log.set_severity_text("INFO");
        log.set_body(AnyValue::from(serde_json::to_string(record)?));
        log.add_attribute("mcp.method.name", record.method);
        log.add_attribute("mcp_fleet.target", record.name.clone());
        log.add_attribute("mcp_fleet.outcome", record.outcome);
        log.add_attribute("mcp_fleet.node", record.origin.node.clone());
        log.add_attribute("mcp_fleet.epoch", record.origin.epoch.clone());
        if let Some(task) = &record.task_id {
            log.add_attribute("mcp_fleet.task_id", task.clone());
        }
        self.logger.emit(log);
        Ok(())
    }
}
