//! The code `#[server]` writes: the block as it was (markers taken off), and `into_entries`,
//! which builds one typed entry per marked method with the typed API's own calls.

use proc_macro2::TokenStream;
use quote::quote;

use crate::parse::{Entry, Kind, ServerImpl};

pub(crate) fn expand(server: ServerImpl) -> TokenStream {
    let ServerImpl { block, entries } = server;
    let self_ty = &block.self_ty;
    let built = entries.iter().map(entry);
    let count = entries.len();
    quote! {
        #block

        impl #self_ty {
            /// The tools, prompts and resource templates of this `#[server]` block, for
            /// `McpServer::add_all` (written by `#[mcp_fleet_server::server]`).
            pub fn into_entries(self) -> ::std::vec::Vec<::mcp_fleet_server::catalog::Registration>
            where
                Self: ::std::marker::Send + ::std::marker::Sync + 'static,
            {
                let this = ::std::sync::Arc::new(self);
                let mut entries = ::std::vec::Vec::with_capacity(#count);
                #( entries.push(#built); )*
                let _ = this;
                entries
            }
        }
    }
}

/// One entry's `typed::…(…)` call with its setters, as a `Registration`.
fn entry(entry: &Entry) -> TokenStream {
    let Entry { kind, method, name, description, args, takes_context, is_async, options } = entry;
    let args_ty = match args {
        Some(ty) => quote!(#ty),
        None => quote!(::mcp_fleet_server::typed::NoArgs),
    };
    let context_ty = match kind {
        Kind::Tool | Kind::Prompt => quote!(::mcp_fleet_server::CallContext),
        Kind::Template => quote!(::mcp_fleet_server::catalog::ResourceRead),
    };
    let call = match (args.is_some(), takes_context) {
        (true, true) => quote!(this.#method(args, context)),
        (true, false) => quote!(this.#method(args)),
        (false, true) => quote!(this.#method(context)),
        (false, false) => quote!(this.#method()),
    };
    let call = if *is_async { quote!(#call.await) } else { call };
    let handler = quote! {{
        let this = ::std::sync::Arc::clone(&this);
        move |args: #args_ty, context: #context_ty| {
            let this = ::std::sync::Arc::clone(&this);
            #[allow(unused_variables)]
            let (args, context) = (args, context);
            async move { #call }
        }
    }};
    let title = options.title.as_ref().map(|t| quote!(.title(#t)));
    let built = match kind {
        Kind::Tool => {
            let hints = options.hints.iter().map(|(setter, on)| hint(setter, *on));
            let task =
                options.task.as_ref().map(|t| quote!(.task_support(::mcp_fleet_server::catalog::TaskSupport::#t)));
            quote!(::mcp_fleet_server::typed::tool(#name, #description, #handler) #title #(#hints)* #task)
        }
        Kind::Prompt => quote!(::mcp_fleet_server::typed::prompt(#name, #description, #handler) #title),
        Kind::Template => {
            let template = options.template.as_deref().unwrap_or_default();
            let mime = options.mime_type.as_ref().map(|m| quote!(.mime_type(#m)));
            quote!(::mcp_fleet_server::typed::template(#template, #name, #handler).description(#description) #title #mime)
        }
    };
    quote!(::mcp_fleet_server::catalog::Registration::from(#built))
}

/// The setter a hint argument (`read_only`, `destructive = false`, …) stands for.
fn hint(setter: &str, on: bool) -> TokenStream {
    let ident = syn::Ident::new(setter, proc_macro2::Span::call_site());
    match setter {
        // Their spec defaults are `false`: a `false` says nothing.
        "read_only" | "idempotent" if on => quote!(.#ident()),
        "read_only" | "idempotent" => quote!(),
        _ => quote!(.#ident(#on)),
    }
}
