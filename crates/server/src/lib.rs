//! The mcp-fleet server framework: serve an MCP server (revision 2026-07-28, and the 2025
//! revisions' clients on the same endpoint) over Streamable HTTP from any number of replicas,
//! with change notifications fanned out over a shared event bus ([`bus::ServerEventBus`]).
//!
//! # The public API
//!
//! Every public item has one path. The crate root holds the twenty names a server needs
//! every day; the rest live in modules named by concept. Items of other crates are
//! re-exported (`#[doc(no_inline)]`) where a user of this crate needs them; everything else of
//! the wire protocol is in `mcp-fleet-protocol` itself.
//!
//! | At the root | What it is |
//! |---|---|
//! | [`create_mcp_handler`], [`McpHandler`] | Build the endpoint; serve it (`serve`), mount it in axum or any tower/hyper stack (it is a `tower::Service` and a hyper `Service`; `handle`; [`McpHandler::draining`] for the embedding server's graceful shutdown — see `examples/axum-embed`), shut it down (`shutdown`), read its health and metrics. |
//! | [`HandlerOptions`] | Every option, with its default (the grouped ones in [`options`]). |
//! | [`McpServer`], [`ServerFactory`] | The server definition and its copy-on-write catalog; one for everyone, or a closure choosing one per request. |
//! | [`server`], [`typed`] | The typed way to write tools, prompts and templates: arguments as Rust types, schemas derived, results converted; `#[server]` registers an `impl` block's methods. |
//! | [`CallContext`], [`RequestContext`], [`Principal`], [`ClientAddr`] | Who is calling (its tenant and scopes), with what request, from which address. |
//! | [`Outcome`], [`InputRequired`] | What a handler returns when it must ask the client first (MRTR). |
//! | [`Notifier`] | `handler.notify().tools_changed()` and friends. |
//! | [`BusHealthState`] | Whether the node hears the bus ([`McpHandler::bus_health`]). |
//! | [`ResponseBody`], [`serve_http`], [`shutdown_signal`] | The body of [`McpHandler::handle`]'s responses; serve another hyper service (an admin port) with the same connection handling and drain; wait for SIGINT/SIGTERM. |
//! | [`ServerError`], [`RpcError`], [`LogLevel`] | Errors (the JSON-RPC one re-exported from `mcp-fleet-protocol`), and the log levels of `notifications/message`. |
//!
//! | Module | What it holds |
//! |---|---|
//! | [`catalog`] | Everything about the catalog: the builder and cache policy, edits and entry handles, the untyped handler types for dynamic catalogs ([`catalog::Handler`], [`catalog::ToolCall`], …), completion, which tools' calls may become tasks. |
//! | [`options`] | The grouped options: how 2025-era clients are served, the response mode. |
//! | [`auth`] | The [`Authenticator`](auth::Authenticator) hook, the RFC 9728 metadata and the `WWW-Authenticate` challenge pieces ([`auth::www_authenticate`]), per-principal rates and stream quotas. The OAuth 2.1 resource server (`BearerAuthenticator`: JWT bearer tokens verified against the issuer's JWKS) is the `mcp-fleet-oauth` crate's. |
//! | [`intercept`] | Hooks around every `tools/call` ([`HandlerOptions::intercept`]), and the shipped result cache. |
//! | [`tasks`] | The tasks extension's lifetime and bounds, and tasks completed from outside their handler ([`McpHandler::task`]). |
//! | `events` | The events extension (cargo feature `events`, experimental): declared event types, the emitter, `events/list` and `events/poll` on every replica. |
//! | [`watch`] | Watchers: code run on one node while anyone in the fleet listens to a URI or a tenant ([`HandlerOptions::watchers`]). |
//! | [`fleet`] | Fleet-consistent catalogs: when changes are announced, and the fleet's membership ([`McpHandler::fleet`]). |
//! | [`audit`] | The audit trail: one record per call and task transition, to JSON lines or any sink ([`HandlerOptions::audit`]). |
//! | [`identity`] | Which code answers: execution epoch, executable digest, version, commit, image ([`HandlerOptions::identity`]). |
//! | [`extensions`] | An extension advertised in `server/discover`. |
//! | [`trace`] | Opt-in OpenTelemetry tracing (cargo feature `otel`). |
//! | [`types`], [`bus`] | The wire protocol's definition and result types, and the bus crate (re-exported). |
//!
//! ```no_run
//! use mcp_fleet_server::{create_mcp_handler, server, HandlerOptions, McpServer};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greeting {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! struct Hello;
//!
//! #[server]
//! impl Hello {
//!     /// Says hello.
//!     #[tool(read_only)]
//!     async fn hello(&self, Greeting { name }: Greeting) -> String {
//!         format!("hello, {name}")
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder("demo", "1.0.0").build();
//! server.add_all(Hello.into_entries())?;
//! let handler = create_mcp_handler(server, HandlerOptions::default()).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let serving = tokio::spawn({ let h = handler.clone(); async move { h.serve(listener).await } });
//! handler.notify().tools_changed().await?;   // every listen stream on every replica hears it
//! handler.shutdown().await;
//! serving.await??;
//! # Ok(()) }
//! ```
//!
//! Inside: `typed` (typed entries, built on the catalog's handler types), `catalog` (the server definition), `methods` (one file per method family),
//! `listen` (the bus consumer, the router and the listen streams), `era2025` (the 2025 era's state:
//! sessions in the fleet, the GET stream, server-to-client requests; `http::era2025` answers its requests), `tasks` (the tasks
//! extension: tasks in the fleet's store, their runners, `tasks/*`), `intercept` (hooks around
//! calls), `audit` (the record of every call), `extensions` (what discover advertises), `notify` (the two paths a
//! change travels), `http` (the hyper service and accept loop), `shutdown` (the drain signal) and
//! `drain` (what `shutdown()` does), `trace` (the spans).
//!
//! The rules the code follows are cited from the spec digest in the repository's
//! `docs/spec-digest/`: "spec digest §6.2" is a section of its `mcp-2026-07-28-server.md`,
//! "ladder steps 10–12" rows of its validation order (§3), `LSTN-4` or `CACHE-6` the rules it
//! tags so; its README says how to read each kind of reference.
//!
//! # Layers
//!
//! Each module names only modules of lower layers (`crate::…` paths, test code aside); two
//! modules of one layer never name each other, so the modules form no cycle. What a lower
//! module must call back into is passed in: a trait it defines and a higher one implements
//! (the fleet reads catalogs through `fleet::Catalogued`; the listen intake hands events to
//! the 2025 sessions and the tasks' loop through `listen::SessionEvents` and
//! `listen::TaskEvents`). `tests/layering.rs` holds this table against the code.
//!
//! | layer | modules | what they are |
//! |---|---|---|
//! | 1 | `error`, `outcome`, `shutdown`, `identity`, `trace` | the error type, what handlers return, the drain signal, which code answers, spans |
//! | 2 | `extensions`, `request_state`, `task_handle` | what discover advertises; the signed `requestState` codec; a task's handle and the store it asks |
//! | 3 | `context` | who calls, with what request, and what the call may reach |
//! | 4 | `metrics` | the node's series |
//! | 5 | `auth`, `audit` | authentication and limits; the record of every call |
//! | 6 | `listen` | the bus consumer, the router and the listen streams |
//! | 7 | `fleet` | membership and converged catalogs |
//! | 8 | `notify` | how a change travels (locally, through the outbox) |
//! | 9 | `catalog`, `watch` | the server definition and its catalog; the watchers run while the fleet listens |
//! | 10 | `typed`, `intercept`, `factory` | typed entries; hooks around calls; the server per request |
//! | 11 | `tasks`, `events` | the tasks extension's store, runners and followers; the events extension's types, log, polls, hooks and webhooks |
//! | 12 | `options` | every option of a handler |
//! | 13 | `services` | what serving a request may use of its handler, as one narrow reference |
//! | 14 | `methods` | the 2026-07-28 methods and their dispatch |
//! | 15 | `era2025` | the 2025 era's state: sessions, the GET streams, relayed requests |
//! | 16 | `shared` | what one handler's requests and background tasks share |
//! | 17 | `http` | the hyper service, the accept loop, the HTTP/1.1 direct path, the 2025 era's requests |
//! | 18 | `endpoint` | `McpHandler` and every public method on it: building it, serving it, its drain |

pub mod audit;
pub mod auth;
pub mod catalog;
mod context;
mod endpoint;
mod era2025;
mod error;
#[cfg(feature = "events")]
pub mod events;
pub mod extensions;
mod factory;
pub mod fleet;
mod http;
pub mod identity;
pub mod intercept;
mod listen;
mod methods;
mod metrics;
mod notify;
pub mod options;
mod outcome;
mod request_state;
mod services;
mod shared;
mod shutdown;
mod task_handle;
pub mod tasks;
pub mod trace;
pub mod typed;
pub mod watch;

pub use catalog::server::McpServer;
pub use context::{CallContext, ClientAddr, Principal, RequestContext};
pub use endpoint::{McpHandler, create_mcp_handler};
pub use error::ServerError;
pub use factory::ServerFactory;
pub use http::{ResponseBody, serve_http, shutdown_signal};
pub use listen::BusHealthState;
pub use notify::Notifier;
pub use options::handler::HandlerOptions;
pub use outcome::{InputRequired, Outcome};

/// Registers the `#[tool]`, `#[prompt]` and `#[resource(template = "…")]` methods of an `impl`
/// block as typed entries (feature `macros`, on by default).
///
/// Each marked method (`async fn`, or a quick plain `fn`) takes `&self`, then optionally its arguments (a struct
/// deriving `Deserialize` and `JsonSchema`) and optionally the call's context
/// ([`CallContext`]; a template's is [`ResourceRead`](catalog::ResourceRead)); it returns what the typed API takes
/// ([`typed::IntoAnswer`]). Its
/// name is the method's, its description the doc comment. The block's type gains
/// `into_entries(self) -> Vec<`[`Registration`](catalog::Registration)`>`; add them with [`McpServer::add_all`].
///
/// Arguments: `#[tool(name = "…", description = "…", title = "…", read_only, destructive =
/// false, idempotent, open_world = false, task = "optional" | "required")]`,
/// `#[prompt(name, description, title)]`, `#[resource(template = "…", name, description,
/// title, mime_type)]`. Two entries of a kind with one name, an argument type that cannot be a
/// JSON object, a method without `&self` or without a description do not compile.
///
/// ```
/// use mcp_fleet_server::{McpServer, server, typed::Json};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Pair {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Answer { value: i64 }
///
/// #[derive(Default)]
/// struct Calculator;
///
/// #[server]
/// impl Calculator {
///     /// Adds two numbers.
///     #[tool(read_only)]
///     async fn sum(&self, Pair { a, b }: Pair) -> String {
///         (a + b).to_string()
///     }
///
///     /// Subtracts b from a.
///     #[tool(name = "subtract")]
///     async fn sub(&self, Pair { a, b }: Pair) -> Json<Answer> {
///         Json(Answer { value: a - b })
///     }
/// }
///
/// let server = McpServer::builder("calculator", "1.0.0").build();
/// server.add_all(Calculator.into_entries()).unwrap();
/// ```
#[cfg(feature = "macros")]
pub use mcp_fleet_macros::server;

#[doc(no_inline)]
pub use mcp_fleet_protocol::RpcError;
#[doc(no_inline)]
pub use mcp_fleet_protocol::envelope::LogLevel;

/// The event bus crate: the [`ServerEventBus`](bus::ServerEventBus) trait, its in-memory
/// backend and the envelope every change travels in.
#[doc(no_inline)]
pub use mcp_fleet_bus as bus;
/// Definition and result types (tools, content, resources, prompts), re-exported from
/// `mcp-fleet-protocol`.
#[doc(no_inline)]
pub use mcp_fleet_protocol::types;
