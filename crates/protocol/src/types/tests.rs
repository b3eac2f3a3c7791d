//! The wire types' serialization, and stamping.

use super::*;
use crate::envelope::SERVER_INFO_KEY;
use serde_json::json;

/// The stamped writer gives what stamping the result's map gives.
#[test]
fn a_stamped_tool_result_is_the_stamped_map() {
    let info = json!({"name": "s", "version": "2"});
    let own_meta = json!({"progress": 1}).as_object().unwrap().clone();
    let own_info = json!({SERVER_INFO_KEY: {"name": "x", "version": "1"}}).as_object().unwrap().clone();
    let results = [
        CallToolResult::text("hello"),
        CallToolResult::error("bad"),
        CallToolResult::structured(json!({"n": 1})),
        CallToolResult { meta: Some(own_meta), ..CallToolResult::text("m") },
        CallToolResult { meta: Some(own_info), ..CallToolResult::default() },
    ];
    for result in results {
        let Value::Object(mut map) = serde_json::to_value(&result).unwrap() else { panic!("an object") };
        map.insert("resultType".into(), json!("complete"));
        stamp_result(&mut map, &info);
        let written = serde_json::to_value(StampedToolResult { result: &result, server_info: &info }).unwrap();
        assert_eq!(written, Value::Object(map), "{result:?}");
    }
}

#[test]
fn stamping_keeps_handler_values() {
    let mut r = json!({"resultType": "input_required", "_meta": {SERVER_INFO_KEY: {"name":"x","version":"1"}}});
    stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["_meta"][SERVER_INFO_KEY]["name"], "x");
    let mut r = json!({});
    stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["_meta"], json!({SERVER_INFO_KEY: {"name":"s","version":"2"}}));
    let mut r = json!({"_meta": {"progress": 1}});
    stamp_result(r.as_object_mut().unwrap(), &json!({"name":"s","version":"2"}));
    assert_eq!(r["_meta"], json!({"progress": 1, SERVER_INFO_KEY: {"name":"s","version":"2"}}));
    CacheHint { ttl_ms: 5, scope: CacheScope::Public }.apply(r.as_object_mut().unwrap());
    assert_eq!((r["ttlMs"].clone(), r["cacheScope"].clone()), (json!(5), json!("public")));
}

#[test]
fn definition_metadata_round_trips_in_wire_shape() {
    let icon = Icon {
        mime_type: Some("image/png".into()),
        sizes: vec!["48x48".into()],
        theme: Some(IconTheme::Dark),
        ..Icon::new("https://x.test/i.png")
    };
    let wire_icon = json!({"src":"https://x.test/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"});
    let tool = Tool::new("t", "d").title("T").icon(icon.clone()).meta("ui", json!({"resourceUri": "ui://t"}));
    let resource = Resource::new("r://x", "x", "d", "text/plain")
        .title("X")
        .size(12)
        .annotations(json!({"priority": 0.5}))
        .icon(icon.clone())
        .meta("k", json!(1));
    let template =
        ResourceTemplate::new("r://{id}", "t", "d", "text/plain").title("Tpl").icon(icon.clone()).meta("k", json!(2));
    let prompt = Prompt::new("p", "d", Vec::new()).title("P").icon(icon.clone()).meta("k", json!(3));
    let info = Implementation {
        icons: vec![icon],
        website_url: Some("https://x.test".into()),
        ..Implementation::new("s", "1")
    };
    let tool_wire = serde_json::to_value(&tool).unwrap();
    assert_eq!(
        (&tool_wire["title"], &tool_wire["icons"][0], &tool_wire["_meta"]["ui"]["resourceUri"]),
        (&json!("T"), &wire_icon, &json!("ui://t"))
    );
    let resource_wire = serde_json::to_value(&resource).unwrap();
    assert_eq!(
        (&resource_wire["size"], &resource_wire["annotations"]["priority"], &resource_wire["title"]),
        (&json!(12), &json!(0.5), &json!("X"))
    );
    assert_eq!(serde_json::to_value(&info).unwrap()["websiteUrl"], "https://x.test");
    assert_eq!(serde_json::from_value::<Tool>(tool_wire).unwrap(), tool);
    assert_eq!(serde_json::from_value::<Resource>(resource_wire).unwrap(), resource);
    assert_eq!(serde_json::from_value::<ResourceTemplate>(serde_json::to_value(&template).unwrap()).unwrap(), template);
    assert_eq!(serde_json::from_value::<Prompt>(serde_json::to_value(&prompt).unwrap()).unwrap(), prompt);
    assert_eq!(serde_json::from_value::<Implementation>(serde_json::to_value(&info).unwrap()).unwrap(), info);
    // Nothing set, nothing on the wire.
    assert_eq!(serde_json::to_value(Prompt::new("p", "d", Vec::new())).unwrap(), json!({"name":"p","description":"d"}));
}

#[test]
fn content_serializes_to_wire_shape() {
    let c = Content::Image { data: "AA==".into(), mime_type: "image/png".into() };
    assert_eq!(serde_json::to_value(c).unwrap(), json!({"type":"image","data":"AA==","mimeType":"image/png"}));
    let r = CallToolResult::error("bad");
    assert_eq!(serde_json::to_value(r).unwrap(), json!({"content":[{"type":"text","text":"bad"}],"isError":true}));
}
