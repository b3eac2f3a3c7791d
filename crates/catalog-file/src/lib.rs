//! The catalog file: an MCP server's tools, resources, resource templates and prompts
//! declared in TOML (or JSON), for behaviour that needs no code — validated as a whole,
//! applied to an [`McpServer`](mcp_fleet_server::McpServer) in one atomic swap, and reloaded
//! when the file changes (Kubernetes ConfigMap mounts included).
//!
//! # Using it
//!
//! | Item | What it is |
//! |---|---|
//! | [`Catalog`], [`Format`] | A parsed, validated file ([`Catalog::load`], [`Catalog::parse`]). |
//! | [`apply`], [`Applied`], [`Change`] | Make a server's catalog exactly the file's, in one swap; what changed. |
//! | [`CatalogReloader`], [`ReloadOptions`], [`Reload`] | Keep it so: [`reload_now`](CatalogReloader::reload_now), and [`run`](CatalogReloader::run) (directory events + poll). |
//! | [`reload_on_sighup`] | SIGHUP → `reload_now`. |
//! | [`ReloadStats`] | Reload counters for metrics ([`RELOADS_METRIC`], [`RELOAD_FAILURES_METRIC`]). |
//! | [`Confinement`], [`EnvAllowlist`] | What a file may reach: files under a folder, allowlisted variables ([`Catalog::parse_confined`], [`ReloadOptions::confinement`]). |
//! | [`CatalogError`], [`Location`], [`ItemRef`], [`Problem`] | One-line errors with the position. |
//!
//! ```
//! use mcp_fleet_catalog_file::{apply, Catalog, Format};
//! use mcp_fleet_server::McpServer;
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let text = r#"
//! [[tools]]
//! name = "greet"
//! description = "Greets someone"
//! input_schema = { type = "object", properties = { name = { type = "string" } }, required = ["name"] }
//! text = "Hello, {{name}}!"
//! "#;
//! let server = McpServer::builder("demo", "1.0.0").build();
//! let catalog = Catalog::parse(text, Format::Toml, "catalog.toml".as_ref())?;
//! let applied = apply(&server, &catalog).await?;
//! assert_eq!(applied.tools.added, 1);
//!
//! let typo = text.replace("{{name}}", "{{nme}}");
//! let err = Catalog::parse(&typo, Format::Toml, "catalog.toml".as_ref()).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     r#"catalog.toml:6:1: tools[0] "greet": template uses undeclared argument "nme" (declared: name)"#
//! );
//! # Ok::<(), mcp_fleet_catalog_file::CatalogError>(())
//! # }).unwrap();
//! ```
//!
//! # The file format
//!
//! TOML, or JSON with the same keys (chosen by the `.toml`/`.json` extension). Four optional
//! lists; **unknown keys are errors**, so a typo never silently drops something.
//! `deploy/catalog.example.toml` shows every feature.
//!
//! - `[[tools]]`: `name` (1–128 of `A-Z a-z 0-9 _ - . /`), optional `title`, `description`,
//!   `icons`, `_meta`, `input_schema` (JSON Schema 2020-12 with `type = "object"`; default: no arguments),
//!   `annotations = { title, read_only_hint, destructive_hint, idempotent_hint,
//!   open_world_hint }`, `required_scopes = ["files:write"]` (OAuth scopes a caller needs:
//!   the tool is hidden from and refused to others), and exactly one of
//!   - `text = "Hello, {{name}}!"` — a template over the arguments declared in
//!     `input_schema.properties`;
//!   - `http = { url, timeout_ms = 10000, headers = { Name = "value" }, redirects = "none",
//!     forward_identity = { subject = "X-Caller", tenant = "X-Tenant" } }` — POST the
//!     arguments as JSON; the response body is the text content, and `structuredContent` too
//!     when it is a JSON object. A non-2xx answer (a 3xx included), a timeout or an
//!     unreachable endpoint is a tool error result (`isError: true`). Header values may use
//!     `${ENV_VAR}` of the allowlist (`MCP_CATALOG_*` by default), resolved at load (a
//!     missing or unlisted variable is a load error). `redirects = "same-origin"` follows up
//!     to 5 redirects within the URL's origin; by default none is followed. `forward_identity`
//!     names the headers that carry the caller's subject and tenant (each optional).
//!     `timeout_ms` is 1–600000; bodies over 1 MiB are refused. Only an http tool may
//!     declare `output_schema`.
//! - `[[resources]]`: `uri` (absolute), `name`, optional `title`, `description`, `mime_type`
//!   (default `text/plain`), `size` (bytes), `annotations = { audience = ["user"],
//!   priority = 0.5, last_modified = "2026-01-12T15:00:58Z" }`, `icons`, `_meta`,
//!   `contents_meta` (the `_meta` of the contents every read returns), and exactly
//!   one of `text` (inline) or `file` (a path, relative to the
//!   catalog's directory and resolving inside it — or inside [`Confinement::files_root`] —
//!   symlinks followed, checked at load and at each read; unreadable or outside → that read
//!   fails with `-32603`).
//! - `[[resource_templates]]`: `uri_template` (RFC 6570 level 1, `notes://{id}`), `name`,
//!   optional `title`, `description`, `mime_type`, `annotations`, `icons`, `_meta`,
//!   `contents_meta`, and `text`, a template over the URI's variables.
//! - `[[prompts]]`: `name`, optional `title`, `description`, `icons`, `_meta`,
//!   `arguments = [{ name, title, description, required = false }]`, and exactly one of `text` (one user message) or
//!   `messages = [{ role = "user" | "assistant", text }]`, templates over the arguments.
//!
//! Every entry may carry `icons = [{ src, mime_type, sizes = ["48x48"], theme = "light" |
//! "dark" }]` (`src` an `https:` or `data:` URI) and `_meta = { … }`, passed through to the
//! wire as written (MCP Apps: `_meta = { ui = { resourceUri = "ui://app/view" } }`).
//!
//! Templates: `{{name}}` is replaced by the value (a string as is, a missing or null value by
//! nothing, anything else as compact JSON); `{{` always opens a placeholder. Keys must be
//! unique per list: tool and prompt names, resource URIs, URI templates.
//!
//! # Errors
//!
//! Validation covers the whole file before the server is touched; the first problem is
//! reported as one line, `file:line:col: list[index] "key": problem` — the line of the
//! offending key for TOML; for JSON, positions of syntax errors only.
//!
//! Inside: `format` (the file's serde structs), `parse` (text → structs, positions),
//! `validate/` (structs → [`Catalog`]), `confine` (what a file may reach), `template` and
//! `env` (the two small languages),
//! `apply` and `http_tool` (the handlers), `egress` (the addresses `http` tools may not
//! reach), `reload/` (reloader, watcher, signal, stats).

mod apply;
mod catalog;
mod confine;
mod egress;
mod env;
mod error;
mod format;
mod http_tool;
mod parse;
mod reload;
mod template;
mod validate;

pub use apply::{Applied, Change, apply};
pub use catalog::Catalog;
pub use confine::{Confinement, EnvAllowlist};
pub use error::{CatalogError, ItemRef, Location, Problem};
pub use parse::Format;
#[cfg(unix)]
pub use reload::reload_on_sighup;
pub use reload::{CatalogReloader, RELOAD_FAILURES_METRIC, RELOADS_METRIC, Reload, ReloadOptions, ReloadStats};
