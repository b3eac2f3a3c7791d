//! The server definition and its catalog: what a handler serves, and the handles that change
//! it at run time.

mod entries;
mod handles;
mod listing;
mod server;
mod template;

pub use entries::{HandlerFuture, PromptGet, ResourceRead, ToolCall};
pub use handles::{EntryHandle, ListKind};
pub use server::{CachePolicy, CatalogEdit, McpServer, McpServerBuilder};
pub use template::{TemplateError, UriTemplate};

pub(crate) use server::Catalog;
