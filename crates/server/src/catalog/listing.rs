//! One ordered, named list of a catalog (tools, resources, templates or prompts), with its
//! wire form and content revision precomputed once per edit, so listing a page costs a slice.
//!
//! Edits only mark the list stale; [`Listing::refresh`] re-serialises and re-hashes it, and the
//! catalog swap calls it once, after the whole batch (a reload of thousands of entries is one
//! rebuild, not one per entry: rebuilding per upsert made a 5,000-tool reload quadratic, long
//! enough to block the runtime past the fleet's membership TTL).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_fleet_protocol::cursor::content_revision;
use serde_json::Value;

use super::entries::Listed;

/// An ordered list of entries; the order is registration order (deterministic, TOOL-2).
#[derive(Clone)]
pub(crate) struct Listing<T> {
    /// The entries in order; a removed one leaves `None` until the next refresh compacts the
    /// list (removing every entry of a large list is then linear, not quadratic).
    items: Vec<Option<T>>,
    /// Key → position in `items`.
    index: HashMap<String, usize>,
    /// Wire form of the enabled entries, in order.
    pub(crate) wire: Arc<Vec<Value>>,
    /// Content hash of `wire`: identical on every replica serving the same list.
    pub(crate) revision: u64,
    /// `wire` and `revision` lag the entries until [`Listing::refresh`].
    stale: bool,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            items: Vec::new(),
            index: HashMap::new(),
            wire: Arc::default(),
            revision: content_revision(b"[]"),
            stale: false,
        }
    }
}

impl<T: Listed + Clone> Listing<T> {
    /// The enabled entry called `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&T> {
        self.index.get(key).and_then(|&i| self.items[i].as_ref()).filter(|e| e.is_enabled())
    }

    /// Whether an entry called `key` is listed, enabled or not.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Every entry in order, enabled or not.
    pub(crate) fn all(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }

    /// Enabled entries in order.
    pub(crate) fn enabled(&self) -> impl Iterator<Item = &T> {
        self.all().filter(|e| e.is_enabled())
    }

    /// Insert or replace (keeping its position) an entry.
    pub(crate) fn upsert(&mut self, entry: T) {
        match self.index.get(entry.key()) {
            Some(&i) => self.items[i] = Some(entry),
            None => {
                self.index.insert(entry.key().to_owned(), self.items.len());
                self.items.push(Some(entry));
            }
        }
        self.stale = true;
    }

    /// Remove an entry; `false` if there was none.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let Some(i) = self.index.remove(key) else { return false };
        self.items[i] = None;
        self.stale = true;
        true
    }

    /// Enable or disable an entry; `false` if there is none.
    pub(crate) fn set_enabled(&mut self, key: &str, on: bool) -> bool {
        let Some(entry) = self.entry_mut(key) else { return false };
        entry.set_enabled(on);
        self.stale = true;
        true
    }

    /// Apply `f` to the entry called `key` (enabled or not); `false` if there is none.
    pub(crate) fn modify(&mut self, key: &str, f: impl FnOnce(&mut T)) -> bool {
        let Some(entry) = self.entry_mut(key) else { return false };
        f(entry);
        self.stale = true;
        true
    }

    /// Bring `wire` and `revision` up to date with the entries (a no-op when nothing changed
    /// since the last refresh).
    pub(crate) fn refresh(&mut self) {
        if !std::mem::take(&mut self.stale) {
            return;
        }
        #[cfg(test)]
        tests::REBUILDS.with(|n| n.set(n.get() + 1));
        if self.items.len() != self.index.len() {
            self.items.retain(Option::is_some);
            self.index = self.all().enumerate().map(|(i, e)| (e.key().to_owned(), i)).collect();
        }
        let wire: Vec<Value> = self.enabled().map(Listed::wire).collect();
        let wire = Value::Array(wire);
        self.revision = content_revision(&mcp_fleet_protocol::jsonrpc::value_bytes(&wire));
        let Value::Array(wire) = wire else { unreachable!("built as an array above") };
        self.wire = Arc::new(wire);
    }

    fn entry_mut(&mut self, key: &str) -> Option<&mut T> {
        let &i = self.index.get(key)?;
        self.items[i].as_mut()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use mcp_fleet_protocol::types::{CallToolResult, Tool};

    use crate::McpServer;

    thread_local! {
        /// Rebuilds of any listing on this thread.
        pub(super) static REBUILDS: Cell<usize> = const { Cell::new(0) };
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_of_thousands_of_edits_rebuilds_each_list_once() {
        let server = McpServer::builder("big", "1").build();
        let before = REBUILDS.with(Cell::get);
        server
            .batch(|edit| {
                for i in 0..2000 {
                    edit.add_tool(Tool::new(format!("t{i}"), "a tool"), |_c| async { Ok(CallToolResult::text("x")) })?;
                }
                for i in (0..2000).step_by(2) {
                    edit.remove(mcp_fleet_protocol::ListKind::Tools, &format!("t{i}"));
                }
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(REBUILDS.with(Cell::get) - before, 1, "one rebuild for the whole batch");
        let catalog = server.snapshot();
        let (wire, _) = catalog.list(mcp_fleet_protocol::ListKind::Tools);
        assert_eq!(wire.len(), 1000);
        assert_eq!(wire[0]["name"], "t1");
        assert_eq!(
            catalog.tools.get("t1999").map(|e| e.def.name.as_str()),
            Some("t1999"),
            "the index follows removals"
        );
    }
}
