//! Wire protocol of MCP revision 2026-07-28 for Streamable HTTP servers: pure types, parsing
//! and validation, with no I/O.
//!
//! Everything here is testable without a socket; the server framework (`mcp-fleet-server`) and
//! the load tester build on it.
//!
//! The rules are the spec digest's, in the repository's `docs/spec-digest/`: comments cite its
//! sections ("spec digest §4.3", "spec §19"), the rows of its validation order ("ladder
//! step 9", §3) and the rules it tags (`HDR-5`, `MRTR-3`); its README says how to read each,
//! and `tests/spec_digest.rs` checks that every such reference resolves.
//!
//! - [`jsonrpc`]: one JSON-RPC message per POST body; compact encoding.
//! - [`error`]: [`ErrorCode`] and [`RpcError`], each knowing its HTTP status.
//! - [`envelope`]: the per-request `_meta` envelope and capability matching.
//! - [`headers`]: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, Base64 sentinel.
//! - [`legacy`]: the 2025-era revisions: negotiation, posted messages and batches, era-pure results.
//! - [`methods`]: [`Method`] (the requests a server answers) and [`ListKind`] (its four lists).
//! - [`validate`]: the validation ladder that decides which error wins.
//! - [`filter`]: `subscriptions/listen` filters and the honoured subset.
//! - [`cursor`]: pagination cursors any replica can decode.
//! - [`schema`]: JSON Schema 2020-12 validation of tool arguments and structured output.
//! - [`sealed`]: small values made opaque and tamper-evident with the `requestState` key ring.
//! - [`sse`]: SSE frame encoding (once per event) and an incremental decoder.
//! - [`state`]: signed MRTR `requestState`.
//! - [`tasks`]: the tasks extension's vocabulary (statuses, capability, timestamps).
//! - [`types`]: result wire types and result stamping.
//!
//! ```
//! use mcp_fleet_protocol::{validate::{validate_message, Validated}, SUPPORTED_VERSIONS};
//! let mut headers = http::HeaderMap::new();
//! headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
//! headers.insert("mcp-method", "tools/list".parse().unwrap());
//! let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
//!   "io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!   "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let validated = validate_message(&headers, body, SUPPORTED_VERSIONS).unwrap();
//! assert!(matches!(validated, Validated::Request { .. }));
//! ```

pub mod cursor;
pub mod envelope;
pub mod error;
pub mod filter;
pub mod headers;
pub mod jsonrpc;
pub mod legacy;
pub mod methods;
pub mod schema;
pub mod sealed;
pub mod sse;
pub mod state;
pub mod tasks;
pub mod types;
pub mod validate;

pub use error::{ErrorCode, RpcError};
pub use filter::{ListenSupport, SubscriptionFilter};
pub use jsonrpc::{Message, Rejection, RequestId};
pub use methods::{ListKind, Method};

/// The protocol versions served through the per-request envelope; `server/discover` and
/// `-32022` both use this one list (VER-2).
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28"];
