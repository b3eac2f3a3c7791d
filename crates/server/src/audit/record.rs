//! [`AuditRecord`]: what one audited call or task transition leaves behind. Its JSON form (one
//! line in a JSON-lines sink) is its `Serialize` output, camelCase, absent fields omitted.

use std::sync::Arc;

use mcp_fleet_protocol::RpcError;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::context::Principal;
use crate::identity::ExecutionIdentity;

/// Which code answered: the same on every record of a process (shared, never copied per call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditOrigin {
    /// This node's id on the bus.
    pub node: String,
    /// The execution epoch ([`ExecutionIdentity::epoch`]).
    pub epoch: String,
    /// The build's digest: the SHA-256 of the running executable, when it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe_sha256: Option<String>,
    /// The code's version.
    pub version: String,
    /// The build's commit, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl AuditOrigin {
    pub(crate) fn new(node: &str, identity: &ExecutionIdentity) -> Self {
        AuditOrigin {
            node: node.to_owned(),
            epoch: identity.epoch.clone(),
            exe_sha256: identity.exe_sha256.clone(),
            version: identity.version.clone(),
            commit: identity.commit.clone(),
        }
    }
}

/// Who called: the principal's issuer, tenant and subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuditPrincipal {
    /// Who vouches for the subject (a bearer token's `iss`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The tenant scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The subject.
    pub subject: String,
}

impl AuditPrincipal {
    pub(crate) fn of(principal: &Principal) -> Self {
        AuditPrincipal {
            issuer: principal.issuer.clone(),
            tenant: principal.tenant.clone(),
            subject: principal.id.clone(),
        }
    }

    /// The principal a task binding names (`Principal::limit_key`: `-` or `<len>:<value>` for
    /// issuer and tenant, then `<len>:<subject>`, separated by `|`); `None` for an anonymous
    /// task (`""`) or a binding this does not read.
    pub(crate) fn of_binding(binding: &str) -> Option<Self> {
        fn field(rest: &str) -> Option<(Option<String>, &str)> {
            if let Some(rest) = rest.strip_prefix('-') {
                return Some((None, rest));
            }
            let (len, rest) = rest.split_once(':')?;
            let len: usize = len.parse().ok()?;
            let value = rest.get(..len)?;
            Some((Some(value.to_owned()), &rest[len..]))
        }
        let (issuer, rest) = field(binding)?;
        let (tenant, rest) = field(rest.strip_prefix('|')?)?;
        let (subject, rest) = field(rest.strip_prefix('|')?)?;
        (rest.is_empty()).then_some(AuditPrincipal { issuer, tenant, subject: subject? })
    }
}

/// One audited call or task transition.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call arrived (a task transition: when it happened), Unix milliseconds;
    /// serialised as RFC 3339 UTC (`"time": "2026-12-02T03:40:00.123Z"`).
    #[serde(rename = "time", serialize_with = "rfc3339")]
    pub time_ms: u64,
    /// Which code answered.
    #[serde(flatten)]
    pub origin: Arc<AuditOrigin>,
    /// The revision of the list the target belongs to (`tools`, `prompts` or `resources`), as
    /// `_meta["dev.mcp-fleet/catalog"]` shows it; absent for task transitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_revision: Option<String>,
    /// Who called; absent without authentication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<AuditPrincipal>,
    /// `tools/call`, `prompts/get`, `resources/read`, or `task` (a task transition).
    pub method: &'static str,
    /// The tool or prompt name, or the resource URI (a task: its tool).
    pub name: String,
    /// SHA-256 (hex) of the arguments' canonical JSON (sorted keys); absent for
    /// `resources/read` and task transitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
    /// The arguments themselves, only with [`AuditOptions::arguments`](crate::audit::AuditOptions::arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// How it ended: `ok`, `tool_error` (a result with `isError`), `input_required`, `task`
    /// (answered with a task), `error` (see `errorCode`), `cancelled` (the client went away);
    /// for a task transition, the status it reached (`working`, `input_required`,
    /// `completed`, `failed`, `cancelled`).
    pub outcome: &'static str,
    /// The JSON-RPC error code, when `outcome` is `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// The error's `data.reason`, when it has one (`drained`, `stale_request_state`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// The task, when the call became one or this is a task transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// A task transition's previous status (absent when the task was just created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_status: Option<&'static str>,
    /// Arrival to answer (a task transition: creation to this transition), milliseconds.
    pub duration_ms: f64,
    /// The trace the call's span belongs to (32 hex digits), with the `otel` feature and a
    /// tracing subscriber exporting it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// How a call's answer ends up in [`AuditRecord::outcome`] and the fields beside it.
pub(crate) struct Ending {
    pub(crate) outcome: &'static str,
    pub(crate) error_code: Option<i64>,
    pub(crate) error_reason: Option<String>,
    pub(crate) task_id: Option<String>,
}

impl Ending {
    pub(crate) fn of(answer: Result<&Value, &RpcError>) -> Self {
        let ending = |outcome| Ending { outcome, error_code: None, error_reason: None, task_id: None };
        match answer {
            Err(error) => Ending {
                error_code: Some(error.code.code()),
                error_reason: error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ..ending("error")
            },
            Ok(result) => match result.get("resultType").and_then(Value::as_str) {
                Some("input_required") => ending("input_required"),
                Some("task") => Ending {
                    task_id: result.get("taskId").and_then(Value::as_str).map(str::to_owned),
                    ..ending("task")
                },
                _ => Ending::complete(result.get("isError").and_then(Value::as_bool) == Some(true)),
            },
        }
    }

    /// A complete result: `tool_error` when the tool reported one, else `ok`.
    pub(crate) fn complete(is_tool_error: bool) -> Self {
        let outcome = if is_tool_error { "tool_error" } else { "ok" };
        Ending { outcome, error_code: None, error_reason: None, task_id: None }
    }
}

/// SHA-256 (hex) of `value`'s canonical JSON.
pub(crate) fn sha256_hex(value: &Value) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(mcp_fleet_protocol::jsonrpc::value_bytes(value));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn rfc3339<S: Serializer>(ms: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(&Rfc3339(*ms))
}

/// Unix milliseconds shown as RFC 3339 UTC with milliseconds.
struct Rfc3339(u64);

impl std::fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (secs, ms) = (self.0 / 1000, self.0 % 1000);
        let (days, of_day) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days);
        let (h, m, s) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
        write!(f, "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(Rfc3339(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Rfc3339(951_782_400_123).to_string(), "2000-02-29T00:00:00.123Z");
        assert_eq!(Rfc3339(1_796_181_296_789).to_string(), "2026-12-02T03:14:56.789Z");
    }

    #[test]
    fn task_bindings_read_back_as_principals() {
        let p = Principal::new("alice|x", Some("acme".into())).with_issuer("https://id.example");
        let read = AuditPrincipal::of_binding(&p.limit_key()).expect("a binding");
        assert_eq!(read, AuditPrincipal::of(&p));
        let anonymous_tenant = Principal::new("bob", None);
        assert_eq!(
            AuditPrincipal::of_binding(&anonymous_tenant.limit_key()),
            Some(AuditPrincipal::of(&anonymous_tenant))
        );
        assert_eq!(AuditPrincipal::of_binding(""), None);
    }

    #[test]
    fn answers_become_outcomes() {
        let of = |answer: Result<Value, RpcError>| Ending::of(answer.as_ref()).outcome;
        assert_eq!(of(Ok(serde_json::json!({"resultType": "complete", "content": []}))), "ok");
        assert_eq!(of(Ok(serde_json::json!({"isError": true}))), "tool_error");
        assert_eq!(of(Ok(serde_json::json!({"resultType": "input_required"}))), "input_required");
        assert_eq!(Ending::complete(false).outcome, "ok");
        assert_eq!(Ending::complete(true).outcome, "tool_error");
        let task = Ending::of(Ok(&serde_json::json!({"resultType": "task", "taskId": "t1"})));
        assert_eq!((task.outcome, task.task_id.as_deref()), ("task", Some("t1")));
        let stale = RpcError::invalid_params("stale").with_data(serde_json::json!({"reason": "stale_request_state"}));
        let ended = Ending::of(Err(&stale));
        assert_eq!(
            (ended.outcome, ended.error_code, ended.error_reason.as_deref()),
            ("error", Some(-32602), Some("stale_request_state"))
        );
    }
}
