//! A POST body parsed with a JSON-RPC message's four members (`jsonrpc`, `id`, `method`,
//! `params`) kept apart from the rest: a message, what nearly every body is, is then read
//! without building (and dropping) a map of its top level and copies of its keys. Anything
//! that is not an object — a 2025-era batch, a stray scalar — is parsed as a plain value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A parsed body.
#[derive(Debug)]
pub(crate) enum Body {
    /// A JSON object.
    Object(Members),
    /// Anything else.
    Other(Value),
}

/// The members of an object body. A key given twice keeps its last value, as a parse into a
/// [`Value`] does.
#[derive(Debug, Default)]
pub(crate) struct Members {
    pub(crate) jsonrpc: Option<Value>,
    pub(crate) id: Option<Value>,
    pub(crate) method: Option<Value>,
    pub(crate) params: Option<Value>,
    /// Every other member (a response's `result` or `error`, unknown ones).
    pub(crate) rest: Map<String, Value>,
}

impl Members {
    /// Split an object into its members (for a body parsed as a [`Value`] elsewhere).
    pub(crate) fn of(mut obj: Map<String, Value>) -> Members {
        Members {
            jsonrpc: obj.remove("jsonrpc"),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            rest: obj,
        }
    }
}

impl Body {
    /// The body as one value, as a plain parse would have given it.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Body::Other(value) => value,
            Body::Object(m) => {
                let mut obj = m.rest;
                let members = [("jsonrpc", m.jsonrpc), ("id", m.id), ("method", m.method), ("params", m.params)];
                for (key, value) in members {
                    if let Some(value) = value {
                        obj.insert(key.to_owned(), value);
                    }
                }
                Value::Object(obj)
            }
        }
    }

    /// `params`, when the body is an object whose `params` is one.
    pub(crate) fn params(&self) -> Option<&Map<String, Value>> {
        match self {
            Body::Object(m) => m.params.as_ref().and_then(Value::as_object),
            Body::Other(_) => None,
        }
    }

    /// `id`, when the body is an object that has one.
    pub(crate) fn id(&self) -> Option<&Value> {
        match self {
            Body::Object(m) => m.id.as_ref(),
            Body::Other(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Body, D::Error> {
        deserializer.deserialize_any(BodyVisitor)
    }
}

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Body;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Body, A::Error> {
        let mut m = Members::default();
        while let Some(Key(key)) = map.next_key()? {
            let value: Value = map.next_value()?;
            match &*key {
                "jsonrpc" => m.jsonrpc = Some(value),
                "id" => m.id = Some(value),
                "method" => m.method = Some(value),
                "params" => m.params = Some(value),
                _ => _ = m.rest.insert(key.into_owned(), value),
            }
        }
        Ok(Body::Object(m))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Body::Other(Value::Array(items)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Body, E> {
        Ok(Body::Other(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Body, E> {
        Ok(Body::Other(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Body, E> {
        Ok(Body::Other(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Body, E> {
        Ok(Body::Other(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Body, E> {
        Ok(Body::Other(Value::String(v.to_owned())))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Body, E> {
        Ok(Body::Other(Value::Null))
    }
}

/// A member's name, borrowed from the body when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the body, splitting it and joining it again gives what a plain parse gives.
    #[test]
    fn a_body_reads_as_a_plain_parse_does() {
        let bodies: [&[u8]; 9] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{}}}"#,
            br#"{"id":"a","id":"b","method":"m","extra":[1,{"x":null}],"result":{}}"#,
            br#"{"jsonr\u0070c":"2.0","\u0069d":3}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]"#,
            b"{}",
            b"[]",
            b"12.5",
            br#""text""#,
            b"null",
        ];
        for raw in bodies {
            let plain: Value = serde_json::from_slice(raw).unwrap();
            let body: Body = serde_json::from_slice(raw).unwrap();
            assert_eq!(body.id(), plain.get("id"), "{}", String::from_utf8_lossy(raw));
            assert_eq!(body.into_value(), plain, "{}", String::from_utf8_lossy(raw));
        }
        for bad in [&b"{\"a\":"[..], b"[1,", b"{\"a\" 1}", b"tru"] {
            assert!(serde_json::from_slice::<Body>(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
