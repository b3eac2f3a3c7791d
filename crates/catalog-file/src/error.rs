//! [`CatalogError`]: every way reading, parsing, validating or applying a catalog file fails.
//!
//! An error is ONE line that says where and what — `catalog.toml:12:1: tools[1] "greet":
//! template uses undeclared argument "nme"` — so the node logs it as it is and counts it by
//! [`CatalogError::kind`]. The *where* is a [`Location`] (file, and line:column when known)
//! and, for semantic errors, an [`ItemRef`]; the *what* of a semantic error is a [`Problem`].
//! Finding positions is left to `locate`.

use std::fmt;

use mcp_fleet_server::ServerError;

/// Where in which file: the file as it was named, and the 1-based line and column when known
/// (TOML always; JSON for syntax and type errors only).
///
/// ```
/// use mcp_fleet_catalog_file::Location;
/// let at = Location { file: "catalog.toml".into(), line_col: Some((12, 1)) };
/// assert_eq!(at.to_string(), "catalog.toml:12:1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as the caller named it.
    pub file: String,
    /// 1-based line and column (in characters), when known.
    pub line_col: Option<(usize, usize)>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((line, col)) => write!(f, "{}:{line}:{col}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Which entry of the file: its list, its index in that list and its key (name, URI or URI
/// template).
///
/// ```
/// use mcp_fleet_catalog_file::ItemRef;
/// let item = ItemRef { list: "tools", index: 1, key: "greet".into() };
/// assert_eq!(item.to_string(), r#"tools[1] "greet""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRef {
    /// `tools`, `resources`, `resource_templates` or `prompts`.
    pub list: &'static str,
    /// 0-based index in that list, as in the file.
    pub index: usize,
    /// The entry's key: a tool or prompt name, a resource URI, a URI template.
    pub key: String,
}

impl fmt::Display for ItemRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}] {:?}", self.list, self.index, self.key)
    }
}

/// Why a catalog could not be loaded or applied. Its `Display` is one line, position first.
///
/// ```
/// use mcp_fleet_catalog_file::{Catalog, Format};
/// let err = Catalog::parse("[[tools]]\nnme = 1\n", Format::Toml, "catalog.toml".as_ref()).unwrap_err();
/// assert_eq!(err.kind(), "syntax");
/// assert!(err.to_string().starts_with("catalog.toml:2:1: unknown field `nme`"), "{err}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The file could not be read.
    #[error("{path}: cannot read the catalog file: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file name ends in neither `.toml` nor `.json`.
    #[error("{path}: unknown catalog format: the file name must end in .toml or .json")]
    UnknownFormat {
        /// The file.
        path: String,
    },
    /// The file is not well-formed TOML/JSON, or does not fit the format (unknown key, wrong
    /// type, missing required key).
    #[error("{at}: {message}")]
    Syntax {
        /// Where.
        at: Location,
        /// The parser's message, on one line.
        message: String,
    },
    /// The file is well-formed but an entry is invalid.
    #[error("{at}: {item}: {problem}")]
    Invalid {
        /// Where: the offending key's line when known, else the entry's.
        at: Location,
        /// Which entry.
        item: ItemRef,
        /// What is wrong (boxed: it keeps every `Result<_, CatalogError>` small).
        problem: Box<Problem>,
    },
    /// The HTTP client for `http` tools could not be built (its TLS backend failed to start).
    #[error("cannot build the HTTP client for http tools: {0}")]
    HttpClient(String),
    /// The server refused an edit (the catalog was validated first, so this is a bug or a
    /// server rule this crate does not know yet). Nothing was changed.
    #[error("the server refused the catalog: {0}")]
    Apply(#[source] ServerError),
}

impl CatalogError {
    /// A short, stable label for metrics and logs: `read`, `format`, `syntax`, `invalid`,
    /// `http_client` or `apply`.
    pub fn kind(&self) -> &'static str {
        match self {
            CatalogError::Read { .. } => "read",
            CatalogError::UnknownFormat { .. } => "format",
            CatalogError::Syntax { .. } => "syntax",
            CatalogError::Invalid { .. } => "invalid",
            CatalogError::HttpClient(_) => "http_client",
            CatalogError::Apply(_) => "apply",
        }
    }
}

/// What is wrong with one entry of an otherwise well-formed file.
///
/// ```
/// use mcp_fleet_catalog_file::{Catalog, CatalogError, Format, Problem};
/// let text = "[[tools]]\nname = \"a\"\ntext = \"x\"\nhttp = { url = \"http://x\" }\n";
/// let Err(CatalogError::Invalid { problem, .. }) = Catalog::parse(text, Format::Toml, "c.toml".as_ref()) else {
///     panic!("invalid")
/// };
/// assert_eq!(*problem, Problem::ExactlyOne("text", "http"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// Two entries of one list share a key.
    #[error("duplicate {what}: {list}[{first}] already declares it")]
    Duplicate {
        /// `name`, `uri` or `uri_template`.
        what: &'static str,
        /// The list.
        list: &'static str,
        /// Index of the first entry with this key.
        first: usize,
    },
    /// A tool or prompt name that a client cannot send in the `mcp-name` header.
    #[error("invalid name: use 1 to 128 characters of A-Z a-z 0-9 _ - . /")]
    Name,
    /// A template names a variable its entry does not declare.
    #[error("template uses undeclared argument {name:?} (declared: {declared})")]
    UndeclaredArgument {
        /// The placeholder's name.
        name: String,
        /// The declared names, comma-separated, or `none`.
        declared: String,
    },
    /// A `{{…}}` template is malformed.
    #[error("invalid template: {0}")]
    Template(String),
    /// A schema is not valid JSON Schema 2020-12.
    #[error("{field} is not valid JSON Schema 2020-12: {message}")]
    Schema {
        /// `input_schema` or `output_schema`.
        field: &'static str,
        /// The validator's message.
        message: String,
    },
    /// A schema's root does not have `"type": "object"` (MCP requires it of both schemas).
    #[error("{field} must have \"type\": \"object\" at its root")]
    SchemaNotObject {
        /// `input_schema` or `output_schema`.
        field: &'static str,
    },
    /// An `x-mcp-header` annotation in the input schema is invalid.
    #[error("input_schema: {0}")]
    ParamHeader(String),
    /// A `text` tool declares an output schema, which promises `structuredContent` it never sends.
    #[error("output_schema needs an http tool: a text tool returns no structuredContent")]
    OutputSchemaOnTextTool,
    /// Not exactly one of two mutually exclusive keys.
    #[error("needs exactly one of `{0}` or `{1}`")]
    ExactlyOne(&'static str, &'static str),
    /// An HTTP URL that does not parse or is not `http`/`https`.
    #[error("invalid url {url:?}: {reason}")]
    Url {
        /// The URL as written.
        url: String,
        /// Why.
        reason: String,
    },
    /// A timeout out of range.
    #[error("timeout_ms must be between 1 and {max}")]
    Timeout {
        /// The largest accepted value.
        max: u64,
    },
    /// A header name or value that HTTP does not allow.
    #[error("invalid header {name:?}: {reason}")]
    Header {
        /// The header name as written.
        name: String,
        /// Why.
        reason: String,
    },
    /// `${NAME}` names an environment variable that is not set.
    #[error("environment variable {0} is not set")]
    MissingEnv(String),
    /// `${NAME}` names a variable outside the allowlist (see
    /// [`EnvAllowlist`](crate::EnvAllowlist)); its value was not read.
    #[error("environment variable {name} is not allowed in a catalog file (allowed: {allowed})")]
    EnvNotAllowed {
        /// The variable.
        name: String,
        /// The allowlist's patterns, comma-separated.
        allowed: String,
    },
    /// A `file` resource that resolves outside the folder resources may be read from.
    #[error("file {file:?} is outside {root}, the folder file resources must come from ({why})")]
    FileOutsideRoot {
        /// The path as written.
        file: String,
        /// The folder.
        root: String,
        /// How it gets out.
        why: &'static str,
    },
    /// A required scope that is not an OAuth scope token (RFC 6749 §3.3: printable ASCII
    /// without space, `"` and `\`).
    #[error("invalid scope {0:?}: a scope is printable ASCII without spaces, quotes or backslashes")]
    Scope(String),
    /// `${` without a closing `}`, or an invalid variable name.
    #[error("invalid ${{…}} reference: {0}")]
    EnvSyntax(String),
    /// A resource URI that is not an absolute URI.
    #[error("invalid uri {uri:?}: {reason}")]
    Uri {
        /// The URI as written.
        uri: String,
        /// Why.
        reason: String,
    },
    /// A malformed RFC 6570 level-1 URI template.
    #[error("invalid URI template: unbalanced braces or an empty variable")]
    UriTemplate,
    /// An icon whose `src` is neither an `https:` nor a `data:` URI.
    #[error("icon src {0:?} must be an https: or data: URI")]
    IconSource(String),
    /// A resource annotation `priority` outside 0–1.
    #[error("priority {0} must be between 0 and 1")]
    Priority(String),
    /// A prompt whose `messages` list is empty.
    #[error("messages must not be empty")]
    NoMessages,
    /// A prompt argument declared twice.
    #[error("argument {0:?} is declared twice")]
    DuplicateArgument(String),
}
