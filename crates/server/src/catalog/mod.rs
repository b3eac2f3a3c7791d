//! The server definition and its catalog: what a handler serves, and the handles that change
//! it at run time.
//!
//! - [`McpServer`] (`server`): identity, the copy-on-write catalog, registration; built by
//!   [`McpServerBuilder`] (`builder`, with [`CachePolicy`]).
//! - [`CatalogEdit`] (`edit`): the edits one swap applies; [`EntryHandle`] (`handles`): one
//!   entry's later changes.
//! - [`Registration`] (`registration`): an entry the typed API built, ready to add.
//! - [`Handler`] and the call arguments (`entry_handler`); the catalog's entries (`entries`), lists
//!   (`listing`), URI templates (`template`) and completion types (`completer`).

mod builder;
mod completer;
mod edit;
mod entries;
mod entry_handler;
mod handles;
mod listing;
mod registration;
pub(crate) mod server;
mod task_support;
mod template;

pub use builder::{CachePolicy, McpServerBuilder};
pub use completer::{CompletionRef, CompletionRequest, CompletionValues};
pub use edit::CatalogEdit;
pub use entry_handler::{Handler, PromptGet, ResourceRead, ToolCall};
pub use handles::EntryHandle;
pub use registration::Registration;
pub use task_support::TaskSupport;

/// Which of the four lists a change or a page is about (re-exported from `mcp-fleet-protocol`).
#[doc(no_inline)]
pub use mcp_fleet_protocol::ListKind;

pub(crate) use completer::{Completers, CompletionFn};
pub(crate) use entries::{DefinitionRevision, PromptFn, ResourceFn, ToolEntry, ToolFn};
pub(crate) use entry_handler::run_guarded;
pub(crate) use server::{Catalog, McpServer};
pub(crate) use template::UriTemplate;
