//! The server crate's layering, as its crate doc writes it down ("Layers"), held against the
//! code: every `crate::…` path in a module's files (test code left out; a name re-exported at
//! the crate root counted for the module that defines it) must name a module of a lower layer.
//! Two modules of one layer never name each other, so the modules form no cycle: the
//! top-level modules are a DAG, and one import running up or sideways fails this test.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The crate doc's lines (`//! ` taken off).
fn crate_doc() -> Vec<String> {
    let lib = fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    lib.lines().filter_map(|l| l.strip_prefix("//!")).map(|l| l.trim().to_owned()).collect()
}

/// `module -> layer` from the doc's table rows `| N | a, b, c | … |` under "## Layers".
fn layers(doc: &[String]) -> BTreeMap<String, u32> {
    let start = doc.iter().position(|l| l == "# Layers").expect("a \"# Layers\" section in the crate doc");
    let mut layers = BTreeMap::new();
    for row in doc[start..].iter().skip(1).take_while(|l| !l.starts_with('#')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else { continue };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            assert!(layers.insert(module.to_owned(), layer).is_none(), "{module} is in two layers");
        }
    }
    layers
}

/// Root re-exports: a name used as `crate::Name` belongs to the module it comes from.
fn root_names() -> BTreeMap<String, String> {
    let lib = fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    let mut names = BTreeMap::new();
    let mut statement = String::new();
    for line in lib.lines() {
        if statement.is_empty() && !line.starts_with("pub use ") {
            continue;
        }
        statement.push_str(line);
        if !line.trim_end().ends_with(';') {
            continue;
        }
        let body = statement.trim_start_matches("pub use ").trim_end_matches(';').to_owned();
        statement.clear();
        let Some((module, rest)) = body.split_once("::") else { continue };
        for name in rest.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or_default().to_owned();
            if !name.is_empty() {
                names.insert(name, module.to_owned());
            }
        }
    }
    names
}

/// Every `.rs` file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).expect("a readable folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// The module a file belongs to: its first path component under `src/`.
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix(SRC).expect("under src");
    let first = relative.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// A file's code without its comments and its test modules.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("a readable file");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text,
    };
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The modules a file's code names: `crate::module::…`, `crate::Name` (through the root's
/// re-exports) and `use crate::{a, b::c}` groups.
fn named(code: &str, roots: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())].split(',').collect(),
            None => vec![rest],
        };
        for item in items {
            let ident: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            match roots.get(&ident) {
                Some(module) => modules.insert(module.clone()),
                None if !ident.is_empty() => modules.insert(ident),
                None => false,
            };
        }
    }
    modules
}

/// Every module -> module import of the crate, with a file that has it.
fn imports() -> BTreeMap<(String, String), PathBuf> {
    let roots = root_names();
    let mut edges = BTreeMap::new();
    for path in files(Path::new(SRC)) {
        let from = module_of(&path);
        let is_test =
            path.file_name().is_some_and(|n| n == "tests.rs") || path.components().any(|c| c.as_os_str() == "tests");
        if from == "lib" || is_test {
            continue;
        }
        for to in named(&code(&path), &roots) {
            if to != from {
                edges.entry((from.clone(), to)).or_insert_with(|| path.clone());
            }
        }
    }
    edges
}

#[test]
fn every_module_names_only_lower_layers() {
    let layers = layers(&crate_doc());
    let mut upward = BTreeSet::new();
    let mut unplaced = BTreeSet::new();
    for ((from, to), file) in imports() {
        let (Some(a), Some(b)) = (layers.get(&from), layers.get(&to)) else {
            unplaced.insert(format!("{from} -> {to} ({})", file.display()));
            continue;
        };
        if b >= a {
            upward.insert(((from, to), file));
        }
    }
    assert!(unplaced.is_empty(), "modules missing from the crate doc's Layers table: {unplaced:#?}");
    assert!(upward.is_empty(), "imports running up or sideways the layering (crate doc, \"Layers\"): {upward:#?}");
}
