//! `tasks/get`, `tasks/update` and `tasks/cancel` (the ext-tasks specification), on any replica:
//! each reads the task from the fleet's store, bound to the principal that created it (another
//! principal gets "not found", as an unknown id does), settles a task whose runner is gone,
//! and — for an update or a cancel — changes the record and tells the runner wherever it runs
//! (directly here, through a bus event elsewhere).
//!
//! Gates before any of it (dispatch ladder steps 10–11): the extension on (else `-32601`), and
//! declared on the request ("servers MUST return `-32021` for non-declaring clients issuing
//! `tasks/get`, `tasks/update`, and `tasks/cancel`").

use mcp_fleet_protocol::tasks::{declares_tasks, required_capability};
use mcp_fleet_protocol::types::stamp_result;
use mcp_fleet_protocol::{Method, RpcError};
use serde_json::{Map, Value, json};

use super::{MethodRequest, Prepared};
use crate::tasks::{Orphaned, TaskRecord, Tasks, binding, now_ms};

/// Ladder steps 10–11 for a task method, then its future.
pub(crate) fn prepare(req: &MethodRequest<'_>, method: Method) -> Result<Prepared, RpcError> {
    let Some(tasks) = req.shared.tasks.clone().filter(|_| !req.era2025) else {
        return Err(RpcError::method_not_found(method.as_str()));
    };
    if !declares_tasks(&req.meta) {
        return Err(RpcError::missing_capability(required_capability()));
    }
    let id = req.string_param("taskId")?;
    let principal = binding(req.ctx.principal.as_ref());
    let responses = match method {
        Method::TasksUpdate => Some(match req.params.get("inputResponses") {
            Some(Value::Object(responses)) => responses.clone(),
            _ => return Err(RpcError::invalid_params("params.inputResponses must be an object").in_band()),
        }),
        _ => None,
    };
    let info = req.server.info().clone();
    let future = async move {
        let mut result = match responses {
            None if method == Method::TasksGet => get(&tasks, &id, &principal).await?,
            None => cancel(&tasks, &id, &principal).await?,
            Some(responses) => update(&tasks, &id, &principal, &responses).await?,
        };
        result.insert("resultType".into(), json!("complete"));
        stamp_result(&mut result, &info);
        Ok(Value::Object(result))
    };
    Ok(Prepared::call(future, None))
}

/// The task, if `principal` may see it: unknown, another principal's, and expired tasks are all
/// `-32602`; one whose runner is gone is failed first.
async fn read(tasks: &Tasks, id: &str, principal: &str) -> Result<TaskRecord, RpcError> {
    let not_found = || RpcError::invalid_params("Failed to retrieve task: Task not found").in_band();
    let record = tasks.store.load(id).await.map_err(store_error)?.ok_or_else(not_found)?;
    if record.principal != principal {
        return Err(not_found());
    }
    if record.is_expired(now_ms()) {
        if !record.status.is_terminal() {
            // Nobody ended it in time (a detached task, or a runner that could not write): end it
            // now, so its principal's slot is given back.
            let node = record.owner.as_ref().map_or_else(String::new, |o| o.node.clone());
            tasks.reap(record, Orphaned::Expired, &node).await;
        }
        return Err(RpcError::invalid_params("Failed to retrieve task: Task has expired").in_band());
    }
    Ok(tasks.settle(record).await)
}

fn store_error(e: mcp_fleet_bus::BusError) -> RpcError {
    RpcError::internal(format!("The task store is unavailable: {e}"))
}

/// `tasks/get`: the `DetailedTask`.
async fn get(tasks: &Tasks, id: &str, principal: &str) -> Result<Map<String, Value>, RpcError> {
    Ok(read(tasks, id, principal).await?.detailed())
}

/// `tasks/update`: keep the answers to outstanding input requests (others are ignored) and
/// wake the runner. Acknowledged with an empty result; a terminal task ignores it too.
async fn update(
    tasks: &Tasks,
    id: &str,
    principal: &str,
    responses: &Map<String, Value>,
) -> Result<Map<String, Value>, RpcError> {
    let record = read(tasks, id, principal).await?;
    if record.status.is_terminal() {
        return Ok(Map::new());
    }
    let mut malformed = None;
    let updated = tasks
        .change(id, |t| match t.answer(responses, now_ms()) {
            Ok(changed) => changed,
            Err(key) => {
                malformed = Some(key);
                false
            }
        })
        .await
        .map_err(store_error)?;
    if let Some(key) = malformed {
        return Err(RpcError::invalid_params(format!(
            "inputResponses.{key} must be an object: the response to that input request"
        ))
        .in_band());
    }
    if updated.is_some_and(|u| u.changed) {
        reach_runner(tasks, &record, "tasks/update");
    }
    Ok(Map::new())
}

/// `tasks/cancel`: the task is cancelled in the store at once (cooperatively: its runner stops
/// the handler when it hears); a terminal task keeps its status, and the ack is the same.
async fn cancel(tasks: &Tasks, id: &str, principal: &str) -> Result<Map<String, Value>, RpcError> {
    let record = read(tasks, id, principal).await?;
    if !record.status.is_terminal() {
        let updated = tasks.change(id, |t| t.cancel(now_ms())).await.map_err(store_error)?;
        if updated.is_some_and(|u| u.changed) {
            reach_runner(tasks, &record, "tasks/cancel");
        }
    }
    Ok(Map::new())
}

/// Tell the runner: directly when it runs here; otherwise the change's bus event reaches it
/// (counted as routed across replicas).
fn reach_runner(tasks: &Tasks, record: &TaskRecord, method: &'static str) {
    if !tasks.running.poke(&record.id) && record.owner.is_some() {
        tasks.metrics.tasks.routed(method);
    }
}
