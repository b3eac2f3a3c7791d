//! Prompts: the listed prompts and their arguments, and the result of `prompts/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, Icon};

impl Prompt {
    /// A prompt with a name, a description and `arguments`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, arguments: Vec<PromptArgument>) -> Self {
        Prompt { name: name.into(), description: Some(description.into()), arguments, ..Prompt::default() }
    }
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Display name (`title`, from `BaseMetadata`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

impl PromptArgument {
    /// An optional argument named `name`.
    ///
    /// ```
    /// use mcp_fleet_protocol::types::PromptArgument;
    /// let a = PromptArgument::new("city").title("City").description("Where").required(true);
    /// assert_eq!(serde_json::to_value(&a).unwrap(), serde_json::json!({"name": "city", "title": "City", "description": "Where", "required": true}));
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), title: None, description: None, required: false }
    }

    /// Set the display name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Set the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether it must be given.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

/// A listed prompt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prompt {
    /// Name.
    pub name: String,
    /// Display name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Arguments.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub arguments: Vec<PromptArgument>,
    /// Icons a host may show for it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub icons: Vec<Icon>,
    /// Extension metadata (`_meta`), e.g. MCP Apps' `{"ui": {"resourceUri": …}}`.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One prompt message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Speaker.
    pub role: Role,
    /// Content block.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata (`_meta`); the server adds its `serverInfo` beside what is here.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none", default)]
    pub meta: Option<Map<String, Value>>,
}
