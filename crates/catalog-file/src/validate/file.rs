//! The whole file: every list in file order, keys unique per list, each entry checked by its
//! own module; the first flaw found is the one reported (one error line, not a wall of them).
//! Also the checks entries share: names a client can send in `mcp-name`, and templates that
//! only use declared variables.

use crate::catalog::Catalog;
use crate::confine::{EnvAllowlist, FilesRoot};
use crate::error::Problem;
use crate::format::FileCatalog;
use crate::parse::PathSeg;
use crate::template::TextTemplate;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// What validation needs besides the file: where `file` paths start and must stay, and the
/// environment `${VAR}` references are resolved against, within its allowlist.
pub(crate) struct Context<'a> {
    /// The folder file resources come from (the catalog file's, by default).
    pub(crate) files: &'a FilesRoot,
    /// Environment lookup.
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
    /// The variables it may be asked for.
    pub(crate) allow: &'a EnvAllowlist,
}

/// The first invalid entry: which one, the path to the offending key inside it, and why.
#[derive(Debug)]
pub(crate) struct Invalid {
    pub(crate) list: &'static str,
    pub(crate) index: usize,
    pub(crate) key: String,
    pub(crate) path: Vec<PathSeg>,
    pub(crate) problem: Problem,
}

/// A problem inside one entry, with the path to the key it is about (empty: the entry itself).
#[derive(Debug)]
pub(crate) struct Flaw {
    pub(crate) path: Vec<PathSeg>,
    pub(crate) problem: Problem,
}

impl Flaw {
    /// A problem about the key at `path`.
    pub(crate) fn at<S: Into<PathSeg>>(path: impl IntoIterator<Item = S>, problem: Problem) -> Flaw {
        Flaw { path: path.into_iter().map(Into::into).collect(), problem }
    }
}

/// Check the whole file.
pub(crate) fn validate(file: FileCatalog, cx: &Context<'_>) -> Result<Catalog, Box<Invalid>> {
    Ok(Catalog {
        tools: each("tools", "name", file.tools, |t| t.name.clone(), |t| super::tool::tool(t, cx))?,
        resources: each("resources", "uri", file.resources, |r| r.uri.clone(), |r| super::resource::resource(r, cx))?,
        templates: each(
            "resource_templates",
            "uri_template",
            file.resource_templates,
            |t| t.uri_template.clone(),
            super::resource::template,
        )?,
        prompts: each("prompts", "name", file.prompts, |p| p.name.clone(), super::prompt::prompt)?,
        // `Catalog::parse_confined` sets it from the confinement.
        addresses: Default::default(),
    })
}

/// Check every entry of one list: its key is unique (reported on the second occurrence),
/// then the entry itself.
fn each<F, E>(
    list: &'static str,
    key_field: &'static str,
    items: Vec<F>,
    key_of: impl Fn(&F) -> String,
    check: impl Fn(F) -> Result<E, Flaw>,
) -> Result<Vec<E>, Box<Invalid>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let key = key_of(&item);
        let invalid =
            |flaw: Flaw| Box::new(Invalid { list, index, key: key.clone(), path: flaw.path, problem: flaw.problem });
        match seen.entry(key.clone()) {
            Entry::Occupied(first) => {
                let problem = Problem::Duplicate { what: key_field, list, first: *first.get() };
                return Err(invalid(Flaw::at([key_field], problem)));
            }
            Entry::Vacant(slot) => {
                slot.insert(index);
            }
        }
        out.push(check(item).map_err(invalid)?);
    }
    Ok(out)
}

/// Tool and prompt names travel in the `mcp-name` header, so they must be short header-safe
/// tokens (the protocol's advice: `[A-Za-z0-9_./-]`, here at most 128 characters).
pub(crate) fn check_name(name: &str) -> Result<(), Flaw> {
    let ok = (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'));
    if ok { Ok(()) } else { Err(Flaw::at(["name"], Problem::Name)) }
}

/// Parse the template at `path` and check it only uses `declared` names.
pub(crate) fn checked_template<S: Into<PathSeg> + Clone>(
    source: &str,
    declared: &[&str],
    path: &[S],
) -> Result<TextTemplate, Flaw> {
    let flaw = |problem| Flaw::at(path.iter().cloned(), problem);
    let template = TextTemplate::parse(source).map_err(|e| flaw(Problem::Template(e)))?;
    if let Some(name) = template.placeholders().find(|name| !declared.contains(name)) {
        let declared = if declared.is_empty() { "none".to_owned() } else { declared.join(", ") };
        return Err(flaw(Problem::UndeclaredArgument { name: name.to_owned(), declared }));
    }
    Ok(template)
}
