//! Reading a `#[server]` block: which methods are entries, of what kind, with which
//! attribute arguments; refusing at compile time what the typed API would refuse at run time.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ImplItem, ImplItemFn, ItemImpl, LitBool, LitStr, Type};

/// The block, its marker attributes taken off, and the entries they marked.
pub(crate) struct ServerImpl {
    pub(crate) block: ItemImpl,
    pub(crate) entries: Vec<Entry>,
}

/// The three kinds of entry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Template,
}

impl Kind {
    fn of(attr: &Attribute) -> Option<Kind> {
        let path = attr.path();
        [("tool", Kind::Tool), ("prompt", Kind::Prompt), ("resource", Kind::Template)]
            .into_iter()
            .find(|(name, _)| path.is_ident(name))
            .map(|(_, kind)| kind)
    }

    fn word(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Template => "resource",
        }
    }

    /// The type of the second argument a handler of this kind may take.
    fn context_type(self) -> &'static str {
        match self {
            Kind::Tool | Kind::Prompt => "CallContext",
            Kind::Template => "ResourceRead",
        }
    }
}

/// One marked method.
pub(crate) struct Entry {
    pub(crate) kind: Kind,
    pub(crate) method: syn::Ident,
    /// The wire name (tools, prompts, templates).
    pub(crate) name: String,
    pub(crate) description: String,
    /// The arguments' type; `None` for a method that takes none.
    pub(crate) args: Option<Type>,
    /// Whether the method takes the call's context after its arguments.
    pub(crate) takes_context: bool,
    /// Whether the method is `async` (a plain `fn` is called, not awaited).
    pub(crate) is_async: bool,
    pub(crate) options: Options,
}

/// The attribute arguments besides `name` and `description`.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) title: Option<String>,
    pub(crate) template: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) task: Option<syn::Ident>,
    /// `(setter, value)`, e.g. `("read_only", true)`.
    pub(crate) hints: Vec<(&'static str, bool)>,
}

/// The behaviour hints a tool takes, named as `TypedTool`'s setters.
const HINTS: [&str; 4] = ["read_only", "destructive", "idempotent", "open_world"];

impl ServerImpl {
    pub(crate) fn parse(mut block: ItemImpl) -> syn::Result<ServerImpl> {
        if !block.generics.params.is_empty() || block.trait_.is_some() {
            let msg = "#[server] goes on a plain `impl Type { … }` block, without generics or a trait";
            return Err(syn::Error::new(block.impl_token.span, msg));
        }
        let mut entries = Vec::new();
        let mut errors: Option<syn::Error> = None;
        for item in &mut block.items {
            let ImplItem::Fn(method) = item else { continue };
            match Entry::take(method) {
                Ok(Some(entry)) => entries.push(entry),
                Ok(None) => {}
                Err(e) => combine(&mut errors, e),
            }
        }
        if let Err(e) = refuse_duplicates(&entries) {
            combine(&mut errors, e);
        }
        match errors {
            Some(errors) => Err(errors),
            None => Ok(ServerImpl { block, entries }),
        }
    }
}

fn combine(errors: &mut Option<syn::Error>, error: syn::Error) {
    match errors {
        Some(all) => all.combine(error),
        None => *errors = Some(error),
    }
}

/// Two entries of one kind with one name: the second is the error.
fn refuse_duplicates(entries: &[Entry]) -> syn::Result<()> {
    let mut seen: HashMap<(u8, &str), &syn::Ident> = HashMap::new();
    for entry in entries {
        let key = (entry.kind as u8, entry.name.as_str());
        if let Some(first) = seen.insert(key, &entry.method) {
            let msg = format!(
                "duplicate {} name `{}` (also used by `fn {first}`): names must be unique; set another with name = \"…\"",
                entry.kind.word(),
                entry.name
            );
            return Err(syn::Error::new(entry.method.span(), msg));
        }
    }
    Ok(())
}

impl Entry {
    /// The entry `method` is marked as, its marker removed; `None` when it is not marked.
    fn take(method: &mut ImplItemFn) -> syn::Result<Option<Entry>> {
        let Some(at) = method.attrs.iter().position(|a| Kind::of(a).is_some()) else { return Ok(None) };
        let attr = method.attrs.remove(at);
        let kind = Kind::of(&attr).unwrap_or(Kind::Tool);
        if let Some(again) = method.attrs.iter().find(|a| Kind::of(a).is_some()) {
            return Err(syn::Error::new(again.span(), "a method is one entry: one #[tool], #[prompt] or #[resource]"));
        }
        let (name, description, options) = attribute_arguments(&attr, kind)?;
        let name = name.unwrap_or_else(|| method.sig.ident.to_string());
        let description = description.or_else(|| doc_comment(&method.attrs)).ok_or_else(|| {
            let msg = format!(
                "add a doc comment to this #[{}] (it becomes the description) or description = \"…\"",
                kind.word()
            );
            syn::Error::new(method.sig.ident.span(), msg)
        })?;
        if kind == Kind::Template && options.template.is_none() {
            return Err(syn::Error::new(attr.span(), "write #[resource(template = \"scheme://{var}\")]"));
        }
        let (args, takes_context) = parameters(method, kind)?;
        let is_async = method.sig.asyncness.is_some();
        let method = method.sig.ident.clone();
        Ok(Some(Entry { kind, method, name, description, args, takes_context, is_async, options }))
    }
}

/// `name`, `description` and the other options of a marker attribute.
fn attribute_arguments(attr: &Attribute, kind: Kind) -> syn::Result<(Option<String>, Option<String>, Options)> {
    let (mut name, mut description, mut options) = (None, None, Options::default());
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok((name, description, options));
    }
    attr.parse_nested_meta(|meta| {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        let text =
            |meta: &syn::meta::ParseNestedMeta| -> syn::Result<String> { Ok(meta.value()?.parse::<LitStr>()?.value()) };
        match (kind, key.as_str()) {
            (_, "name") => name = Some(text(&meta)?),
            (_, "description") => description = Some(text(&meta)?),
            (_, "title") => options.title = Some(text(&meta)?),
            (Kind::Template, "template") => options.template = Some(text(&meta)?),
            (Kind::Template, "mime_type") => options.mime_type = Some(text(&meta)?),
            (Kind::Tool, "task") => options.task = Some(task_support(&text(&meta)?, meta.path.span())?),
            (Kind::Tool, hint) if HINTS.contains(&hint) => {
                let on = if meta.input.peek(syn::Token![=]) { meta.value()?.parse::<LitBool>()?.value } else { true };
                let setter = HINTS.iter().copied().find(|k| *k == hint).unwrap_or_default();
                options.hints.push((setter, on));
            }
            _ => return Err(meta.error(unknown_key(kind, &key))),
        }
        Ok(())
    })?;
    Ok((name, description, options))
}

fn unknown_key(kind: Kind, key: &str) -> String {
    let allowed = match kind {
        Kind::Tool => "name, description, title, read_only, destructive, idempotent, open_world, task",
        Kind::Prompt => "name, description, title",
        Kind::Template => "template, name, description, title, mime_type",
    };
    format!("unknown #[{}] argument `{key}`; expected one of: {allowed}", kind.word())
}

fn task_support(value: &str, span: Span) -> syn::Result<syn::Ident> {
    match value {
        "optional" => Ok(syn::Ident::new("Optional", span)),
        "required" => Ok(syn::Ident::new("Required", span)),
        "forbidden" => Ok(syn::Ident::new("Forbidden", span)),
        _ => Err(syn::Error::new(span, "task = \"optional\", \"required\" or \"forbidden\"")),
    }
}

/// The doc comment's lines, one leading space each taken off, trimmed.
fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The method's arguments after `&self`: `(args type, whether the context follows)`.
fn parameters(method: &ImplItemFn, kind: Kind) -> syn::Result<(Option<Type>, bool)> {
    let mut inputs = method.sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {}
        _ => {
            return Err(syn::Error::new(method.sig.span(), format!("a #[{}] method takes `&self` first", kind.word())));
        }
    }
    let typed: Vec<&Type> = inputs.filter_map(|a| if let FnArg::Typed(t) = a { Some(&*t.ty) } else { None }).collect();
    let is_context = |ty: &Type| last_segment(ty).is_some_and(|s| s == kind.context_type());
    match typed.as_slice() {
        [] => Ok((None, false)),
        [only] if is_context(only) => Ok((None, true)),
        [args] => Ok((Some(object_type(args, kind)?.clone()), false)),
        [args, ctx] if is_context(ctx) => Ok((Some(object_type(args, kind)?.clone()), true)),
        _ => {
            let msg = format!(
                "a #[{}] method takes (&self), (&self, args: T) or (&self, args: T, ctx: {})",
                kind.word(),
                kind.context_type()
            );
            Err(syn::Error::new(method.sig.inputs.span(), msg))
        }
    }
}

fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// `ty`, unless it plainly cannot be a JSON object (a number, a string, a list, a tuple, …).
fn object_type(ty: &Type, kind: Kind) -> syn::Result<&Type> {
    const NOT_OBJECTS: [&str; 22] = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "f32", "f64", "bool",
        "char", "String", "str", "Vec", "Option", "HashSet", "BTreeSet",
    ];
    let plainly_not = match ty {
        Type::Path(_) => last_segment(ty).is_some_and(|s| NOT_OBJECTS.contains(&s.as_str())),
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) | Type::Reference(_) => true,
        _ => false,
    };
    if plainly_not {
        let msg = format!(
            "the arguments of a #[{}] are a JSON object: use a struct deriving Deserialize and JsonSchema, e.g. `struct Args {{ value: ... }}`",
            kind.word()
        );
        return Err(syn::Error::new(ty.span(), msg));
    }
    Ok(ty)
}
