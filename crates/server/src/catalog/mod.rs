//! The server definition and its catalog: what a handler serves, and the handles that change
//! it at run time.
//!
//! - [`McpServer`] (`server`): identity, the copy-on-write catalog, registration; built by
//!   [`McpServerBuilder`] (`builder`, with [`CachePolicy`]).
//! - [`CatalogEdit`] (`edit`): the edits one swap applies; [`EntryHandle`] (`handles`): one
//!   entry's later changes.
//! - [`Handler`] and the call arguments (`handler`); the catalog's entries (`entries`), lists
//!   (`listing`), URI templates (`template`) and completion types (`completion`).

mod builder;
mod completion;
mod edit;
mod entries;
mod handler;
mod handles;
mod listing;
mod server;
mod template;

pub use builder::{CachePolicy, McpServerBuilder};
pub use completion::{CompletionRef, CompletionRequest, CompletionValues};
pub use edit::CatalogEdit;
pub use handler::{Handler, PromptGet, ResourceRead, ToolCall};
pub use handles::EntryHandle;
pub use server::McpServer;

pub(crate) use entries::{DefinitionRevision, ToolFn};
pub(crate) use handler::run_guarded;
pub(crate) use server::{Catalog, WeakServer};
