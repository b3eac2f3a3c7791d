//! The attribute macros of mcp-fleet: `#[server]` on an `impl` block turns each method marked
//! `#[tool]`, `#[prompt]` or `#[resource(template = …)]` into an entry of the typed API
//! (`typed::tool`, `typed::prompt`, `typed::template`), and gives the type an
//! `into_entries(self)` that returns them for `McpServer::add_all`.
//!
//! Use it through `mcp_fleet_server::server` (this crate's paths assume the server crate is a
//! dependency called `mcp_fleet_server`). The macro writes exactly the calls a user could write
//! by hand, so the two never drift; what it can see wrong — a duplicate name, an argument type
//! that cannot be a JSON object, a missing `&self`, a missing description — is a
//! compile error that says what to write instead. A method may be `async fn` or a plain `fn`
//! (called on the runtime's thread: keep it quick).
//!
//! - `parse`: the marked methods and their attribute arguments, with those checks.
//! - `expand`: the generated code.

mod expand;
mod parse;

use proc_macro::TokenStream;

/// Registers the `#[tool]`, `#[prompt]` and `#[resource(template = "…")]` methods of an
/// `impl` block; see `mcp_fleet_server::server` for the whole story.
#[proc_macro_attribute]
pub fn server(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return syn::Error::new_spanned(attr, "#[server] takes no arguments; put them on each #[tool] or #[prompt]")
            .into_compile_error()
            .into();
    }
    let block = syn::parse_macro_input!(item as syn::ItemImpl);
    match parse::ServerImpl::parse(block) {
        Ok(server) => expand::expand(server).into(),
        Err(error) => error.into_compile_error().into(),
    }
}
