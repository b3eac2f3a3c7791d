//! Pagination cursors (spec digest §14): opaque to clients, self-contained so any replica can
//! decode them, and naming the catalog revision they came from.
//!
//! The revision is a hash of the list's content, not a local counter, so two replicas serving
//! the same catalog mint and accept the same cursors. A cursor from another revision is refused
//! with a clear `-32602` telling the client to restart from the first page.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::RpcError;

/// A position in one paginated list at one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor<'a> {
    /// Which list (`tools`, `prompts`, `resources`, `resourceTemplates`).
    pub list: &'a str,
    /// Content revision of the list when the cursor was minted.
    pub revision: u64,
    /// Index of the first item of the next page.
    pub offset: usize,
}

impl Cursor<'_> {
    /// Encode as an opaque string.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("v1:{}:{:x}:{}", self.list, self.revision, self.offset))
    }

    /// Decode a client's cursor for `list` at `revision` and return the offset it points to.
    pub fn decode_offset(raw: &str, list: &str, revision: u64) -> Result<usize, RpcError> {
        let invalid = || RpcError::invalid_params("Invalid cursor").in_band();
        let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let mut parts = text.split(':');
        let (Some("v1"), Some(l), Some(rev), Some(off), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        if l != list {
            return Err(invalid());
        }
        let rev = u64::from_str_radix(rev, 16).map_err(|_| invalid())?;
        let offset = off.parse::<usize>().map_err(|_| invalid())?;
        if rev != revision {
            return Err(RpcError::invalid_params(
                "Cursor is from an older catalog revision; restart listing from the first page",
            )
            .with_data(serde_json::json!({"reason": "stale_cursor"}))
            .in_band());
        }
        Ok(offset)
    }
}

/// A stable 64-bit content hash (FNV-1a), identical on every replica, platform and run — for
/// content revisions, and anywhere else the fleet needs a name that every node derives alike.
///
/// ```
/// assert_eq!(mcp_fleet_protocol::cursor::content_revision(b"a"), 0xaf63_dc4c_8601_ec8c);
/// ```
pub fn content_revision(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// A content revision as it travels (list results, `server/discover`, notifications' `_meta`,
/// fleet membership records, the operator's fleet view): 16 lowercase hex digits, a string so
/// no JSON client loses precision.
///
/// ```
/// assert_eq!(mcp_fleet_protocol::cursor::revision_hex(0xaf), "00000000000000af");
/// ```
pub fn revision_hex(revision: u64) -> String {
    format!("{revision:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_stale_or_foreign_cursors() {
        let c = Cursor { list: "tools", revision: 0xabc, offset: 20 }.encode();
        assert_eq!(Cursor::decode_offset(&c, "tools", 0xabc).unwrap(), 20);
        let stale = Cursor::decode_offset(&c, "tools", 0xabd).unwrap_err();
        assert!(stale.message.contains("older catalog revision"));
        assert!(Cursor::decode_offset(&c, "prompts", 0xabc).is_err());
        assert!(Cursor::decode_offset("%%%", "tools", 0xabc).is_err());
        assert!(Cursor::decode_offset("", "tools", 0xabc).is_err());
    }

    #[test]
    fn revision_is_content_derived() {
        assert_eq!(content_revision(b"abc"), content_revision(b"abc"));
        assert_ne!(content_revision(b"abc"), content_revision(b"abd"));
    }
}
