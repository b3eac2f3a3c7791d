//! [`TaskCall`]: a `tools/call` of a task-supporting tool from a client that declared the
//! extension — run by a task of its own, so the call survives its HTTP request.
//!
//! 1. **Synchronous** while the client waits: a handler that answers within
//!    [`TaskOptions::create_after`](crate::tasks::TaskOptions::create_after) gets the ordinary answer
//!    (a result, or an MRTR `input_required`: "resolve all MRTR exchanges synchronously before
//!    responding with a `CreateTaskResult`").
//! 2. **Becoming a task** when that time passes, or when the handler asks
//!    ([`CallContext::run_as_task`](crate::CallContext::run_as_task)): the task is created in
//!    the fleet's store first, then the client gets the `CreateTaskResult`, while the very same
//!    handler future keeps running.
//! 3. **As a task**: progress messages become the status message (at most one write per
//!    status interval); the answer completes or fails the task; an `input_required` answer
//!    makes the task wait for `tasks/update` (from any replica, through the store and a bus
//!    event), then runs the handler again with the answers and its state — the MRTR machinery,
//!    with the task as the round trip. A cancel (or a failure written elsewhere) stops the
//!    handler; so does the TTL.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_fleet_protocol::RpcError;
use mcp_fleet_protocol::tasks::{TASK_RESULT_TYPE, TaskStatus};
use mcp_fleet_protocol::types::{CallToolResult, stamp_result};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::time::{Instant, sleep, sleep_until};

use super::{Finisher, capability_for};
use crate::catalog::{ToolCall, ToolFn, run_guarded};
use crate::context::CallContext;
use crate::outcome::Outcome;
use crate::tasks::{Bells, Orphaned, Phase, Registered, TaskLink, TaskRecord, Tasks, new_task_id, now_ms};

/// How often a task waiting for input reads its record without being poked: only an event
/// lost in a bus gap needs it.
const FALLBACK_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The call's answer to its HTTP request.
type Answer = Result<Value, RpcError>;
/// One invocation of the handler.
type Work = BoxFuture<'static, Result<Outcome<CallToolResult>, RpcError>>;

/// Why a running task's runner ends without the handler's answer.
enum Stop {
    /// Cancelled, failed elsewhere, gone, or the node drains: nothing more to write.
    Over,
    /// Its TTL passed: fail it.
    Expired,
}

/// How the synchronous phase ended.
enum Sync {
    Answered(Answer),
    Become {
        detached: bool,
    },
    /// The client went away before an answer: the call ends, as any call would.
    Gone,
}

/// One task-capable call (see the module docs).
pub(crate) struct TaskCall {
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) handler: ToolFn,
    pub(crate) tool: String,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) ctx: CallContext,
    pub(crate) link: Arc<TaskLink>,
    pub(crate) finisher: Finisher,
    /// The caller's binding (who may read the task).
    pub(crate) principal: String,
}

impl TaskCall {
    /// Start the runner; the future resolves to the call's answer (a result, `input_required`,
    /// or the `CreateTaskResult`), its error with the status it is answered with (a handler's
    /// in-band, a refused task's 429 when the principal holds its limit).
    pub(crate) fn answer(self) -> impl Future<Output = Answer> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        tokio::spawn(self.run(tx));
        async move { rx.await.unwrap_or_else(|_| Err(RpcError::internal("The call's runner stopped before answering"))) }
    }

    async fn run(self, mut reply: oneshot::Sender<Answer>) {
        let mut work =
            run_guarded(&self.handler, ToolCall { arguments: self.arguments.clone(), ctx: self.ctx.clone() });
        let detached = match self.wait_sync(&mut work, &mut reply).await {
            Sync::Answered(answer) => return drop(reply.send(answer.map_err(RpcError::from_handler))),
            Sync::Gone => return,
            Sync::Become { detached } => detached,
        };
        let id = new_task_id();
        // Registered before the record exists, so no reader ever finds the task without its
        // runner (it would count it orphaned).
        let registered = (!detached).then(|| self.tasks.running.register(&id));
        match self.tasks.create(&id, &self.tool, &self.principal, detached).await {
            Ok(record) => {
                let _ = reply.send(Ok(self.created_result(&record)));
                self.link.phase.send_replace(Phase::Task { id: id.clone(), detached });
            }
            Err(error) => {
                self.link.phase.send_replace(Phase::Refused);
                return drop(reply.send(Err(error)));
            }
        }
        match registered {
            Some((bells, registered)) => self.run_task(&id, &bells, registered, work).await,
            // A detached task is its handle's; the handler only finishes what it started.
            None => drop(work.await),
        }
    }

    /// Phase 1: the client waits for the handler, until it answers, asks to become a task, or
    /// the creation delay passes.
    async fn wait_sync(&self, work: &mut Work, reply: &mut oneshot::Sender<Answer>) -> Sync {
        let mut phase = self.link.phase.subscribe();
        let window = sleep(self.tasks.options.create_after);
        tokio::pin!(window);
        loop {
            tokio::select! {
                biased;
                outcome = &mut *work => return Sync::Answered(outcome.and_then(|o| self.finisher.finish(o, None))),
                changed = phase.changed() => {
                    let asked = match &*phase.borrow_and_update() {
                        Phase::Asked { detached } => Some(*detached),
                        _ => None,
                    };
                    match (changed, asked) {
                        (_, Some(detached)) => return Sync::Become { detached },
                        // The link outlives this runner (it holds it): never closed here.
                        (Err(_), None) => return Sync::Gone,
                        (Ok(()), None) => {}
                    }
                }
                () = &mut window => return Sync::Become { detached: false },
                () = reply.closed() => return Sync::Gone,
            }
        }
    }

    /// The `CreateTaskResult`: the seed task, flat, `resultType: "task"`.
    fn created_result(&self, record: &TaskRecord) -> Value {
        let mut result = record.task();
        result.insert("resultType".into(), json!(TASK_RESULT_TYPE));
        stamp_result(&mut result, self.finisher.info());
        Value::Object(result)
    }

    /// Phase 3: run the task to its end.
    async fn run_task(&self, id: &str, bells: &Bells, registered: Registered, mut work: Work) {
        let _registered = registered;
        let deadline = Instant::now() + self.tasks.options.ttl;
        let mut active = self.tasks.metrics.tasks.active(TaskStatus::Working);
        loop {
            let outcome = match self.drive(id, bells, &mut work, deadline).await {
                Ok(outcome) => outcome,
                Err(stop) => return self.stopped(id, stop).await,
            };
            if self.link.is_detached() {
                // Detached while running: its handle completes it; no runner watches it now.
                let _ = self.tasks.change(id, |t| t.owner.take().is_some()).await;
                return;
            }
            match outcome {
                Ok(Outcome::Complete(result)) => return self.complete(id, result).await,
                Err(error) => return self.fail(id, &error).await,
                Ok(Outcome::InputRequired(asked)) => {
                    active.set(TaskStatus::InputRequired);
                    let answers = match self.ask(id, bells, asked.input_requests, deadline).await {
                        Ok(answers) => answers,
                        Err(stop) => return self.stopped(id, stop).await,
                    };
                    active.set(TaskStatus::Working);
                    work = self.invoke(answers, asked.request_state);
                }
            }
        }
    }

    /// Drive the handler until it answers, writing its status messages on the way.
    async fn drive(
        &self,
        id: &str,
        bells: &Bells,
        work: &mut Work,
        deadline: Instant,
    ) -> Result<Result<Outcome<CallToolResult>, RpcError>, Stop> {
        let every = self.tasks.options.status_interval;
        let mut flush_at: Option<Instant> = None;
        let mut last_flush: Option<Instant> = None;
        loop {
            tokio::select! {
                biased;
                outcome = &mut *work => return Ok(outcome),
                () = bells.stop.notified() => return Err(Stop::Over),
                () = sleep_until(deadline) => return Err(Stop::Expired),
                () = bells.poke.notified() => {
                    if self.is_over(id).await {
                        return Err(Stop::Over);
                    }
                }
                () = self.link.status_set.notified() => {
                    let earliest = last_flush.map_or_else(Instant::now, |at| at + every);
                    flush_at.get_or_insert(earliest.max(Instant::now()));
                }
                () = sleep_until(flush_at.unwrap_or(deadline)), if flush_at.is_some() => {
                    flush_at = None;
                    last_flush = Some(Instant::now());
                    if let Some(message) = self.link.take_status() {
                        let _ = self.tasks.change(id, |t| t.set_message(message.clone(), now_ms())).await;
                    }
                }
            }
        }
    }

    /// Whether the task ended elsewhere (cancelled, failed by a replica that judged it
    /// orphaned) or is gone.
    async fn is_over(&self, id: &str) -> bool {
        match self.tasks.store.load(id).await {
            Ok(Some(record)) => record.status.is_terminal(),
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Wait for the answers to `requests` (the handler's keys), from `tasks/update` on any
    /// replica. No requests (state only): run again after the poll interval.
    async fn ask(
        &self,
        id: &str,
        bells: &Bells,
        requests: Map<String, Value>,
        deadline: Instant,
    ) -> Result<Map<String, Value>, Stop> {
        // MRTR-3: never ask for what the request's declared capabilities do not cover.
        if let Some(missing) = requests.values().find_map(|r| self.ctx.meta.missing_capabilities(&capability_for(r))) {
            self.fail(id, &RpcError::missing_capability(missing)).await;
            return Err(Stop::Over);
        }
        if requests.is_empty() {
            tokio::select! {
                biased;
                () = bells.stop.notified() => return Err(Stop::Over),
                () = sleep_until(deadline) => return Err(Stop::Expired),
                () = sleep(self.tasks.options.poll_interval) => return Ok(Map::new()),
            }
        }
        match self.tasks.change(id, |t| t.ask(requests.clone(), now_ms())).await {
            Ok(Some(updated)) if updated.changed => {}
            Ok(_) => return Err(Stop::Over),
            Err(e) => {
                tracing::warn!(task = id, error = %e, "could not record a task's input requests");
                self.fail(id, &RpcError::internal(format!("The task store is unavailable: {e}"))).await;
                return Err(Stop::Over);
            }
        }
        loop {
            tokio::select! {
                biased;
                () = bells.stop.notified() => return Err(Stop::Over),
                () = sleep_until(deadline) => return Err(Stop::Expired),
                () = bells.poke.notified() => {}
                () = sleep(FALLBACK_POLL) => {}
            }
            let mut taken = None;
            let took = self.tasks.store.update(id, |t| {
                taken = t.round_answered().then(|| t.take_answers());
                taken.is_some()
            });
            match took.await {
                Ok(Some(updated)) if updated.record.status.is_terminal() => return Err(Stop::Over),
                Ok(Some(_)) => {
                    if let Some(answers) = taken {
                        return Ok(answers);
                    }
                }
                Ok(None) => return Err(Stop::Over),
                Err(e) => tracing::warn!(task = id, error = %e, "reading a task's answers failed; retrying"),
            }
        }
    }

    /// The handler again, with the round's answers and its own state (an MRTR retry).
    fn invoke(&self, answers: Map<String, Value>, state: Option<Value>) -> Work {
        let mut ctx = self.ctx.clone();
        ctx.input_responses = (!answers.is_empty()).then_some(Value::Object(answers));
        ctx.request_state = state;
        ctx.notifications = None;
        run_guarded(&self.handler, ToolCall { arguments: self.arguments.clone(), ctx })
    }

    async fn stopped(&self, id: &str, stop: Stop) {
        if let Stop::Expired = stop {
            self.fail(id, &Orphaned::Expired.error(&self.tasks.node)).await;
        }
    }

    /// Complete the task with the handler's result (as the call would have answered it), or
    /// fail it when the result is over the size limit.
    async fn complete(&self, id: &str, result: CallToolResult) {
        let value = match self.tasks.stored_result(result) {
            Ok(value) => value,
            Err(error) => return self.fail(id, &error).await,
        };
        if let Err(e) = self.tasks.change(id, |t| t.complete(value.clone(), now_ms())).await {
            tracing::warn!(task = id, error = %e, "could not store a task's result");
        }
    }

    /// Fail the task with `error` (its `data` dropped when over the size limit).
    async fn fail(&self, id: &str, error: &RpcError) {
        let mut error = error.clone();
        let size = serde_json::to_vec(&error.to_error_object()).map_or(0, |b| b.len());
        if size > self.tasks.options.max_result_bytes {
            error.data = None;
        }
        if let Err(e) = self.tasks.change(id, |t| t.fail(&error, now_ms())).await {
            tracing::warn!(task = id, error = %e, "could not store a task's failure");
        }
    }
}
