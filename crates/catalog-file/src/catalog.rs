//! [`Catalog`]: a whole catalog file, parsed and validated — every entry with the definition
//! the server lists and what answers it — ready for [`apply`](crate::apply). Loading reads
//! the file, parses it (`parse`), validates it (`validate`) and positions the first error.
//!
//! A `Catalog` only exists if the whole file is valid, which is what makes applying it
//! atomic: there is nothing left to refuse halfway through.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_fleet_server::types::{Prompt, Resource, ResourceTemplate, Role, Tool};
use reqwest::header::{HeaderMap, HeaderName};
use serde_json::{Map, Value};

use crate::confine::{Confinement, FilesRoot};
use crate::egress::AddressPolicy;
use crate::env::process_env;
use crate::error::{CatalogError, ItemRef, Location};
use crate::format::Redirects;
use crate::parse::{Format, locate, parse_file};
use crate::template::TextTemplate;
use crate::validate::{Context, Invalid, validate};

/// A validated catalog: tools, resources, resource templates and prompts, in file order.
///
/// ```
/// use mcp_fleet_catalog_file::{Catalog, Format};
/// let text = r#"
/// [[tools]]
/// name = "greet"
/// description = "Greets someone"
/// input_schema = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }
/// text = "Hello, {{name}}!"
/// "#;
/// let catalog = Catalog::parse(text, Format::Toml, "catalog.toml".as_ref())?;
/// assert_eq!(catalog.tools().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["greet"]);
/// assert_eq!(catalog.len(), 1);
/// # Ok::<(), mcp_fleet_catalog_file::CatalogError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub(crate) tools: Vec<ToolEntry>,
    pub(crate) resources: Vec<ResourceEntry>,
    pub(crate) templates: Vec<TemplateEntry>,
    pub(crate) prompts: Vec<PromptEntry>,
    /// What its `http` tools may not connect to (from the [`Confinement`]).
    pub(crate) addresses: AddressPolicy,
}

/// A tool, how it answers, and the scopes its callers need.
#[derive(Debug, Clone)]
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    pub(crate) answer: ToolAnswer,
    pub(crate) required_scopes: Vec<String>,
}

/// How a tool answers.
#[derive(Debug, Clone)]
pub(crate) enum ToolAnswer {
    /// A text template over the arguments.
    Text(TextTemplate),
    /// The arguments POSTed as JSON; the answer's body is the result (boxed: a target is
    /// large, a template small).
    Http(Box<HttpTarget>),
}

/// Where and how an `http` tool forwards its arguments. Header values are marked sensitive;
/// the URL's `Debug` is redacted (it may carry a password or a key parameter).
#[derive(Clone)]
pub(crate) struct HttpTarget {
    pub(crate) url: reqwest::Url,
    pub(crate) timeout: Duration,
    pub(crate) headers: HeaderMap,
    pub(crate) redirects: Redirects,
    pub(crate) identity: IdentityHeaders,
}

impl std::fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTarget")
            .field("url", &mcp_fleet_server::bus::redact::redact_url(self.url.as_str()))
            .field("timeout", &self.timeout)
            .field("headers", &self.headers)
            .field("redirects", &self.redirects)
            .field("identity", &self.identity)
            .finish()
    }
}

/// The headers that carry the caller's identity to an http tool's backend, if the file names
/// them.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdentityHeaders {
    /// The principal's subject (`Principal::id`).
    pub(crate) subject: Option<HeaderName>,
    /// The principal's tenant (`Principal::tenant`).
    pub(crate) tenant: Option<HeaderName>,
}

/// A static resource and where its contents come from.
#[derive(Debug, Clone)]
pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    pub(crate) source: ResourceSource,
    /// `_meta` of every read's contents.
    pub(crate) contents_meta: Option<Map<String, Value>>,
}

/// A static resource's contents: inline, or a file read at each request — checked again at
/// each read to be inside `root`.
#[derive(Debug, Clone)]
pub(crate) enum ResourceSource {
    Text(String),
    File { path: PathBuf, root: FilesRoot },
}

/// A resource template and the text template its matches answer with.
#[derive(Debug, Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    pub(crate) text: TextTemplate,
    /// `_meta` of every read's contents.
    pub(crate) contents_meta: Option<Map<String, Value>>,
}

/// A prompt and its message templates.
#[derive(Debug, Clone)]
pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    pub(crate) messages: Vec<(Role, TextTemplate)>,
}

impl Catalog {
    /// Read, parse and validate the file at `path` (format by extension; `${VAR}`s from the
    /// process environment, `MCP_CATALOG_*` only). Relative `file` paths are relative to
    /// `path`'s directory, and must stay in it.
    pub fn load(path: impl AsRef<Path>) -> Result<Catalog, CatalogError> {
        let path = path.as_ref();
        let format = Format::from_path(path).ok_or_else(|| CatalogError::UnknownFormat { path: shown(path) })?;
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read { path: shown(path), source })?;
        Catalog::parse(&text, format, path)
    }

    /// Parse and validate `text`. `origin` names the file in errors and is where relative
    /// `file` paths start; `${VAR}`s come from the process environment.
    pub fn parse(text: &str, format: Format, origin: &Path) -> Result<Catalog, CatalogError> {
        Catalog::parse_with_env(text, format, origin, &process_env)
    }

    /// [`Catalog::parse`] with `${VAR}`s resolved by `env` instead of the process environment
    /// (still only those the default [`Confinement`] allows).
    ///
    /// ```
    /// use mcp_fleet_catalog_file::{Catalog, Format};
    /// let text = r#"
    /// [[tools]]
    /// name = "ask"
    /// http = { url = "https://backend.invalid/ask", headers = { Authorization = "Bearer ${MCP_CATALOG_TOKEN}" } }
    /// "#;
    /// let env = |name: &str| (name == "MCP_CATALOG_TOKEN").then(|| "t0k3n".to_string());
    /// assert!(Catalog::parse_with_env(text, Format::Toml, "c.toml".as_ref(), &env).is_ok());
    /// let err = Catalog::parse_with_env(text, Format::Toml, "c.toml".as_ref(), &|_: &str| None).unwrap_err();
    /// assert_eq!(err.to_string(), r#"c.toml:4:59: tools[0] "ask": environment variable MCP_CATALOG_TOKEN is not set"#);
    /// ```
    pub fn parse_with_env(
        text: &str,
        format: Format,
        origin: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Catalog, CatalogError> {
        Catalog::parse_confined(text, format, origin, &Confinement::default(), env)
    }

    /// [`Catalog::parse_with_env`] within `confinement`: where `file` resources may come from
    /// and which variables `${VAR}` may read.
    ///
    /// ```
    /// use mcp_fleet_catalog_file::{Catalog, Confinement, EnvAllowlist, Format};
    /// let text = "[[tools]]\nname = \"a\"\nhttp = { url = \"http://x\", headers = { K = \"${ORDERS_KEY}\" } }\n";
    /// let env = |_: &str| Some("k".to_string());
    /// let err = Catalog::parse_with_env(text, Format::Toml, "c.toml".as_ref(), &env).unwrap_err();
    /// assert!(err.to_string().contains("environment variable ORDERS_KEY is not allowed"), "{err}");
    /// let widened = Confinement { env: EnvAllowlist::default().widen(["ORDERS_*"]), ..Confinement::default() };
    /// assert!(Catalog::parse_confined(text, Format::Toml, "c.toml".as_ref(), &widened, &env).is_ok());
    /// ```
    pub fn parse_confined(
        text: &str,
        format: Format,
        origin: &Path,
        confinement: &Confinement,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Catalog, CatalogError> {
        let file = shown(origin);
        let raw = parse_file(text, format, &file)?;
        let files = FilesRoot::new(confinement.files_root.as_deref(), origin.parent().unwrap_or(Path::new("")));
        let cx = Context { files: &files, env, allow: &confinement.env };
        let mut catalog = validate(raw, &cx).map_err(|invalid| positioned(*invalid, text, format, file))?;
        catalog.addresses = AddressPolicy::new(confinement.allow_link_local);
        Ok(catalog)
    }

    /// The tools' definitions, in file order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter().map(|e| &e.def)
    }

    /// The resources' definitions, in file order.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().map(|e| &e.def)
    }

    /// The resource templates' definitions, in file order.
    pub fn resource_templates(&self) -> impl Iterator<Item = &ResourceTemplate> {
        self.templates.iter().map(|e| &e.def)
    }

    /// The prompts' definitions, in file order.
    pub fn prompts(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.iter().map(|e| &e.def)
    }

    /// How many entries, all lists together.
    pub fn len(&self) -> usize {
        self.tools.len() + self.resources.len() + self.templates.len() + self.prompts.len()
    }

    /// Whether the file declares nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The [`CatalogError`] for `invalid`, at the line of the offending key when it can be found.
fn positioned(invalid: Invalid, text: &str, format: Format, file: String) -> CatalogError {
    let line_col = locate(text, format, invalid.list, invalid.index, &invalid.path);
    CatalogError::Invalid {
        at: Location { file, line_col },
        item: ItemRef { list: invalid.list, index: invalid.index, key: invalid.key },
        problem: Box::new(invalid.problem),
    }
}

/// A path as errors show it.
fn shown(path: &Path) -> String {
    path.display().to_string()
}
