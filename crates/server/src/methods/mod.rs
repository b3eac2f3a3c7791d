//! The 2026-07-28 methods, one file per family (like mini-redis `cmd/`), and the dispatch
//! that runs the server-side gates (method exists, client capabilities, `Mcp-Param-*`) and
//! turns a validated request into something the HTTP layer can answer.

mod answer;
pub(crate) mod completion;
mod cut;
pub(crate) mod discover;
mod dispatch;
#[cfg(feature = "events")]
mod events;
mod listen;
mod lists;
mod mrtr;
mod prompts;
mod resources;
mod task_call;
mod task_tool;
mod tasks;
mod tools;

pub(crate) use tools::required_scopes;

pub(crate) use answer::CallResult;
pub(crate) use dispatch::{CallFuture, MethodRequest, Prepared, prepare};
pub(crate) use mrtr::{Finisher, capability_for};

#[cfg(test)]
mod tests;
