//! Validation: turn the file's structs into a checked [`Catalog`](crate::Catalog), or say
//! which entry is wrong, where inside it, and why — before anything touches the server.
//!
//! - `file`: the whole file — each list in order, unique keys, the first flaw wins.
//! - `tool`, `resource` (resources and resource templates), `prompt`: one entry each.
//! - `schema`: JSON Schema 2020-12 checks of input and output schemas.
//! - `display`: what hosts show of any entry (icons, resource annotations).
//!
//! Turning a flaw into a positioned [`CatalogError`](crate::CatalogError) is `catalog`'s job.

mod display;
mod file;
mod prompt;
mod resource;
mod schema;
mod tool;

#[cfg(test)]
mod tests;

pub(crate) use file::{Context, Invalid, validate};
