//! Generators shared by the property tests.

use proptest::prelude::*;
use serde_json::{Value, json};

/// Arbitrary JSON, a few levels deep: printable ASCII strings and integers.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    json_with(prop_oneof![3 => scalar(), 1 => "[ -~]{0,12}".prop_map(Value::String)], "[a-zA-Z]{1,20}")
}

/// Arbitrary JSON of every kind: any Unicode in strings and keys, integers of both signs
/// beyond `i64`, fractions.
#[allow(dead_code)] // not every test file uses both
pub(crate) fn any_json() -> impl Strategy<Value = Value> {
    json_with(
        prop_oneof![
            3 => scalar(),
            1 => any::<u64>().prop_map(|n| json!(n)),
            1 => any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            1 => ".{0,12}".prop_map(Value::String),
        ],
        ".{0,8}",
    )
}

/// `null`, a boolean or an `i64`.
fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), any::<i64>().prop_map(|n| json!(n))].boxed()
}

fn json_with(leaf: impl Strategy<Value = Value> + 'static, key: &'static str) -> impl Strategy<Value = Value> {
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
