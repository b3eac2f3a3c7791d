//! [`TaskRecord`]: one task as the fleet's task store holds it, and its state machine — a
//! plain struct whose transitions are pure functions of the record and the time, so every rule
//! is tested without a broker. Every replica reads and writes records with compare-and-set
//! (see `store`), so the transitions below are what any replica may apply.
//!
//! The rules, from the ext-tasks specification:
//! - `working` ↔ `input_required` → one terminal status (`completed`, `failed`, `cancelled`),
//!   after which the record never changes again.
//! - An input request key is unique over the task's lifetime: a key the handler asks again is
//!   renamed (`key~2`), and answers are handed back to the handler under its own keys.
//! - A `tasks/update` answers only outstanding keys; others are ignored; a partial answer keeps
//!   the task `input_required` with only the unanswered keys.
//! - `failed` carries the JSON-RPC error; `completed` the result, a tool error included.

use std::collections::{BTreeMap, BTreeSet};

use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::{TaskStatus, iso8601};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::context::Principal;

/// The current record format.
const FORMAT: u32 = 1;

/// The node that runs a task: its id and the incarnation (one per handler start) that took it,
/// so a node restarted under the same id is not mistaken for the one that died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Owner {
    pub(crate) node: String,
    pub(crate) run: String,
}

/// One task, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskRecord {
    #[serde(rename = "f")]
    pub(crate) format: u32,
    pub(crate) id: String,
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
    pub(crate) created_ms: u64,
    pub(crate) updated_ms: u64,
    pub(crate) ttl_ms: u64,
    pub(crate) poll_ms: u64,
    /// Who may see it: [`binding`] of the principal that created it.
    #[serde(default)]
    pub(crate) principal: String,
    /// The node running it; `None` for a detached task, whose work lives elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<Owner>,
    /// The tool it runs (logs, metrics).
    #[serde(default)]
    pub(crate) tool: String,
    /// Outstanding input requests, by wire key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) input_requests: Map<String, Value>,
    /// Answers of the current round, by wire key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) answers: Map<String, Value>,
    /// The current round's wire key → the key the handler used.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) keys: BTreeMap<String, String>,
    /// Every wire key ever issued.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) issued: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<Value>,
}

/// Who may read and change a task: the creating principal's issuer, tenant and subject (the
/// key per-principal limits count under), or `""` for a server without authentication (then
/// the unguessable id is the only key).
pub(crate) fn binding(principal: Option<&Principal>) -> String {
    principal.map(Principal::limit_key).unwrap_or_default()
}

/// Task ids are 128 random bits in lowercase hex: unguessable, and a valid keyspace key.
pub(crate) fn new_task_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Whether `id` could be one of ours (anything else is unknown without a round trip).
pub(crate) fn is_task_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What a task is created with.
pub(crate) struct NewTask<'a> {
    pub(crate) id: String,
    pub(crate) tool: &'a str,
    pub(crate) principal: String,
    pub(crate) owner: Option<Owner>,
    pub(crate) ttl_ms: u64,
    pub(crate) poll_ms: u64,
}

impl TaskRecord {
    /// A task `working` from `now`.
    pub(crate) fn new(task: NewTask<'_>, now: u64) -> Self {
        TaskRecord {
            format: FORMAT,
            id: task.id,
            status: TaskStatus::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: task.ttl_ms,
            poll_ms: task.poll_ms,
            principal: task.principal,
            owner: task.owner,
            tool: task.tool.to_owned(),
            input_requests: Map::new(),
            answers: Map::new(),
            keys: BTreeMap::new(),
            issued: BTreeSet::new(),
            result: None,
            error: None,
        }
    }

    /// Whether its TTL, counted from its creation, has passed.
    pub(crate) fn is_expired(&self, now: u64) -> bool {
        now >= self.created_ms.saturating_add(self.ttl_ms)
    }

    /// The `Task` members every shape carries (a `CreateTaskResult` carries only these).
    pub(crate) fn task(&self) -> Map<String, Value> {
        let mut task = Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(self.status.as_str()));
        if let Some(message) = &self.message {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(iso8601(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(iso8601(self.updated_ms)));
        task.insert("ttlMs".into(), json!(self.ttl_ms));
        task.insert("pollIntervalMs".into(), json!(self.poll_ms));
        task
    }

    /// The `DetailedTask` of `tasks/get` and `notifications/tasks`: the task, with its
    /// outstanding `inputRequests`, its `result` or its `error` as its status says.
    pub(crate) fn detailed(&self) -> Map<String, Value> {
        let mut task = self.task();
        match self.status {
            TaskStatus::InputRequired => {
                task.insert("inputRequests".into(), Value::Object(self.input_requests.clone()));
            }
            TaskStatus::Completed => {
                task.insert("result".into(), self.result.clone().unwrap_or_else(|| json!({})));
            }
            TaskStatus::Failed => {
                task.insert(
                    "error".into(),
                    self.error.clone().unwrap_or_else(|| json!({"code": -32603, "message": "Failed"})),
                );
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        task
    }

    /// The handler asks for input (`requests` by its own keys): the task waits, each request
    /// under a wire key never issued before. `false` (and no change) once terminal.
    pub(crate) fn ask(&mut self, requests: Map<String, Value>, now: u64) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.keys.clear();
        self.answers.clear();
        self.input_requests.clear();
        for (key, request) in requests {
            let wire = self.fresh_key(&key);
            self.issued.insert(wire.clone());
            self.keys.insert(wire.clone(), key);
            self.input_requests.insert(wire, request);
        }
        self.status = TaskStatus::InputRequired;
        self.message = Some("Waiting for the client's input".into());
        self.updated_ms = now;
        true
    }

    /// `key`, or `key~2`, `key~3`, … — the first never issued in this task.
    fn fresh_key(&self, key: &str) -> String {
        if !self.issued.contains(key) {
            return key.to_owned();
        }
        (2u64..).map(|n| format!("{key}~{n}")).find(|k| !self.issued.contains(k)).unwrap_or_default()
    }

    /// A client's `tasks/update`: answers to outstanding keys are kept, the rest ignored (never
    /// issued, already answered, superseded). The task works again once every key is
    /// answered. `Ok(true)` when something changed; `Err(key)` when an outstanding key's answer
    /// is not an object (nothing changes then).
    pub(crate) fn answer(&mut self, responses: &Map<String, Value>, now: u64) -> Result<bool, String> {
        if self.status != TaskStatus::InputRequired {
            return Ok(false);
        }
        if let Some((key, _)) = responses.iter().find(|(k, v)| self.input_requests.contains_key(*k) && !v.is_object()) {
            return Err(key.clone());
        }
        let mut changed = false;
        for (key, response) in responses {
            if self.input_requests.remove(key).is_some() {
                self.answers.insert(key.clone(), response.clone());
                changed = true;
            }
        }
        if changed {
            if self.input_requests.is_empty() {
                self.status = TaskStatus::Working;
                self.message = Some("Resuming with the client's input".into());
            }
            self.updated_ms = now;
        }
        Ok(changed)
    }

    /// Whether every request of the round is answered and the runner may resume.
    pub(crate) fn round_answered(&self) -> bool {
        self.status == TaskStatus::Working && self.input_requests.is_empty() && !self.keys.is_empty()
    }

    /// The round's answers, under the keys the handler asked them with; the round is over.
    pub(crate) fn take_answers(&mut self) -> Map<String, Value> {
        let keys = std::mem::take(&mut self.keys);
        std::mem::take(&mut self.answers)
            .into_iter()
            .filter_map(|(wire, v)| Some((keys.get(&wire)?.clone(), v)))
            .collect()
    }

    /// A new status message while the task runs; `false` when terminal or unchanged.
    pub(crate) fn set_message(&mut self, message: String, now: u64) -> bool {
        if self.status.is_terminal() || self.message.as_deref() == Some(message.as_str()) {
            return false;
        }
        self.message = Some(message);
        self.updated_ms = now;
        true
    }

    /// Cancel it (the client asked); `false` when already terminal.
    pub(crate) fn cancel(&mut self, now: u64) -> bool {
        self.finish(TaskStatus::Cancelled, "Cancelled at the client's request".into(), now)
    }

    /// Complete it with `result` (a tool error too); `false` when already terminal.
    pub(crate) fn complete(&mut self, result: Value, now: u64) -> bool {
        let message = match result.get("isError") {
            Some(Value::Bool(true)) => "The tool reported an error",
            _ => "Completed",
        };
        let done = self.finish(TaskStatus::Completed, message.into(), now);
        if done {
            self.result = Some(result);
        }
        done
    }

    /// Fail it with the JSON-RPC `error`; `false` when already terminal.
    pub(crate) fn fail(&mut self, error: &RpcError, now: u64) -> bool {
        let done = self.finish(TaskStatus::Failed, error.message.clone(), now);
        if done {
            self.error = Some(error.to_error_object());
        }
        done
    }

    fn finish(&mut self, status: TaskStatus, message: String, now: u64) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.status = status;
        self.message = Some(message);
        self.input_requests.clear();
        self.answers.clear();
        self.keys.clear();
        self.issued.clear();
        self.updated_ms = now;
        true
    }
}

#[cfg(test)]
mod tests;
