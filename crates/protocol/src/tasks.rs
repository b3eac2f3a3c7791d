//! The `io.modelcontextprotocol/tasks` extension's wire vocabulary (the ext-tasks
//! specification, `specification/draft/tasks.md`): its identifier, methods and notification,
//! the task statuses, the capability a client declares per request, and the ISO 8601
//! timestamps a task carries. Pure: the server keeps tasks in its fleet-wide store.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::envelope::RequestMeta;

/// The extension's identifier, under `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The task status notification, sent on listen streams that asked for the task's id.
pub const TASK_NOTIFICATION: &str = "notifications/tasks";

/// The `resultType` of a `CreateTaskResult` ("MUST NOT" be used on any other result).
pub const TASK_RESULT_TYPE: &str = "task";

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server needs input from the client (`inputRequests`, answered by `tasks/update`).
    InputRequired,
    /// Completed with a result (a tool result with `isError: true` included).
    Completed,
    /// Failed with a JSON-RPC error.
    Failed,
    /// Cancelled before completion.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in a fixed order (metrics labels).
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task can no longer change (completed, failed or cancelled).
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// The client capability a task needs: `{"extensions": {"io.modelcontextprotocol/tasks": {}}}`,
/// also the `data.requiredCapabilities` of the `-32021` a non-declaring client gets.
pub fn required_capability() -> Value {
    json!({"extensions": {TASKS_EXTENSION: {}}})
}

/// Whether this request declared the extension ("a server MUST NOT return `CreateTaskResult`
/// to a client that did not include the extension capability on its request").
///
/// The capability matching rule of [`RequestMeta::missing_capabilities`] applied to
/// [`required_capability`] without building it (this runs on every `tools/call`): `extensions`
/// an object holding the extension's key, with any value but `null`.
pub fn declares_tasks(meta: &RequestMeta) -> bool {
    meta.client_capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(|declared| !declared.is_null())
}

/// Milliseconds since the Unix epoch as an ISO 8601 UTC timestamp with milliseconds
/// (`2025-11-25T10:30:00.000Z`), the form of `createdAt` and `lastUpdatedAt`.
///
/// ```
/// assert_eq!(mcp_fleet_protocol::tasks::iso8601(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(mcp_fleet_protocol::tasks::iso8601(1_764_066_600_123), "2025-11-25T10:30:00.123Z");
/// ```
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 → (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_their_wire_names() {
        for status in TaskStatus::ALL {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
        assert!(!TaskStatus::InputRequired.is_terminal() && TaskStatus::Cancelled.is_terminal());
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn the_capability_is_read_from_the_request() {
        let params = |caps: Value| {
            let params = json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
            }});
            RequestMeta::from_params(params.as_object().unwrap()).unwrap()
        };
        assert!(declares_tasks(&params(json!({"extensions": {TASKS_EXTENSION: {}}}))));
        assert!(!declares_tasks(&params(json!({"extensions": {"other/ext": {}}}))));
        assert!(!declares_tasks(&params(json!({}))));
    }

    #[test]
    fn the_shortcut_agrees_with_the_matching_rule() {
        for caps in [
            json!({}),
            json!({"extensions": null}),
            json!({"extensions": true}),
            json!({"extensions": []}),
            json!({"extensions": {}}),
            json!({"extensions": {TASKS_EXTENSION: null}}),
            json!({"extensions": {TASKS_EXTENSION: {}}}),
            json!({"extensions": {TASKS_EXTENSION: {"x": 1}}}),
            json!({"extensions": {TASKS_EXTENSION: false}}),
        ] {
            let meta = RequestMeta { client_capabilities: caps.as_object().unwrap().clone(), ..RequestMeta::default() };
            let by_rule = meta.missing_capabilities(&required_capability()).is_none();
            assert_eq!(declares_tasks(&meta), by_rule, "{caps}");
        }
    }
}
