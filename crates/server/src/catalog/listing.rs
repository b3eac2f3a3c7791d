//! One ordered, named list of a catalog (tools, resources, templates or prompts), with its
//! wire form and content revision precomputed at every change, so listing a page costs a slice.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_fleet_protocol::cursor::content_revision;
use serde_json::Value;

use super::entries::Listed;

/// An ordered list of entries; the order is registration order (deterministic, TOOL-2).
#[derive(Clone)]
pub(crate) struct Listing<T> {
    items: Vec<T>,
    index: HashMap<String, usize>,
    /// Wire form of the enabled entries, in order.
    pub(crate) wire: Arc<Vec<Value>>,
    /// Content hash of `wire`: identical on every replica serving the same list.
    pub(crate) revision: u64,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing { items: Vec::new(), index: HashMap::new(), wire: Arc::default(), revision: content_revision(b"[]") }
    }
}

impl<T: Listed + Clone> Listing<T> {
    /// The enabled entry called `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&T> {
        self.index.get(key).map(|&i| &self.items[i]).filter(|e| e.is_enabled())
    }

    /// Every entry in order, enabled or not.
    pub(crate) fn all(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Enabled entries in order.
    pub(crate) fn enabled(&self) -> impl Iterator<Item = &T> {
        self.items.iter().filter(|e| e.is_enabled())
    }

    /// Insert or replace (keeping its position) an entry.
    pub(crate) fn upsert(&mut self, entry: T) {
        match self.index.get(entry.key()) {
            Some(&i) => self.items[i] = entry,
            None => {
                self.index.insert(entry.key().to_owned(), self.items.len());
                self.items.push(entry);
            }
        }
        self.rebuild();
    }

    /// Remove an entry; `false` if there was none.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let Some(i) = self.index.remove(key) else { return false };
        self.items.remove(i);
        self.index = self.items.iter().enumerate().map(|(i, e)| (e.key().to_owned(), i)).collect();
        self.rebuild();
        true
    }

    /// Enable or disable an entry; `false` if there is none.
    pub(crate) fn set_enabled(&mut self, key: &str, on: bool) -> bool {
        let Some(&i) = self.index.get(key) else { return false };
        self.items[i].set_enabled(on);
        self.rebuild();
        true
    }

    /// Apply `f` to the entry called `key` (enabled or not); `false` if there is none.
    pub(crate) fn modify(&mut self, key: &str, f: impl FnOnce(&mut T)) -> bool {
        let Some(&i) = self.index.get(key) else { return false };
        f(&mut self.items[i]);
        self.rebuild();
        true
    }

    fn rebuild(&mut self) {
        let wire: Vec<Value> = self.enabled().map(Listed::wire).collect();
        let wire = Value::Array(wire);
        self.revision = content_revision(&mcp_fleet_protocol::jsonrpc::value_bytes(&wire));
        let Value::Array(wire) = wire else { unreachable!("built as an array above") };
        self.wire = Arc::new(wire);
    }
}
