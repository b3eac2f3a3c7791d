//! Wire types of 2026-07-28 results (spec digest §8–§13): tools, content blocks, resources,
//! prompts, cache hints, and the result stamping every response goes through.
//!
//! These are plain serde structs with builder-style constructors; the server framework fills
//! them in and serializes them, clients may deserialize them. One file per family:
//! `implementation` (who speaks, icons), `stamp` (cache hints, result stamping), `tool`,
//! `content`, `resource`, `prompt`, `event` (the experimental events extension).

mod content;
mod event;
mod implementation;
mod prompt;
mod resource;
mod stamp;
mod tool;

pub use content::{Annotations, Content, ResourceContents};
pub use event::{
    DeliveryMode, DeliveryStatus, EventDescriptor, EventOccurrence, PollEventsParams, PollEventsResult,
    SubscribeEventsParams, SubscribeEventsResult, UnsubscribeEventsParams, WebhookTarget,
};
pub use implementation::{Icon, IconTheme, Implementation};
pub use prompt::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
pub use resource::{Resource, ResourceTemplate};
pub use stamp::{CacheHint, CacheScope, StampedToolResult, stamp_result};
pub use tool::{CallToolResult, Tool};

use serde_json::{Map, Value};

/// `title`, `icons` and `_meta` setters shared by every listed definition.
macro_rules! definition_metadata {
    ($($t:ty),+) => {$(
        impl $t {
            /// Set the display name.
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.title = Some(title.into());
                self
            }

            /// Add an icon.
            pub fn icon(mut self, icon: Icon) -> Self {
                self.icons.push(icon);
                self
            }

            /// Set one `_meta` entry (e.g. `"ui"` → `{"resourceUri": "ui://…"}` for MCP Apps).
            pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
                self.meta.get_or_insert_with(Map::new).insert(key.into(), value);
                self
            }
        }
    )+};
}

definition_metadata!(Tool, Resource, ResourceTemplate, Prompt);

#[cfg(test)]
mod tests;
