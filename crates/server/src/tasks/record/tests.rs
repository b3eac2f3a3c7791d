use super::*;

fn task() -> TaskRecord {
    let new = NewTask {
        id: new_task_id(),
        tool: "slow",
        principal: binding(Some(&Principal::new("alice", Some("acme".into())))),
        owner: Some(Owner { node: "a".into(), run: "r1".into() }),
        ttl_ms: 60_000,
        poll_ms: 1000,
    };
    TaskRecord::new(new, 1_000)
}

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": {"type": "object"}}})
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn a_new_task_has_the_wire_fields_of_a_create_task_result() {
    let t = task();
    let wire = Value::Object(t.task());
    assert_eq!(wire["status"], "working");
    assert_eq!(wire["ttlMs"], 60_000);
    assert_eq!(wire["pollIntervalMs"], 1000);
    assert_eq!(wire["createdAt"], "1970-01-01T00:00:01.000Z");
    for absent in ["result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "task"] {
        assert!(wire.get(absent).is_none(), "{absent}");
    }
    assert!(is_task_id(&t.id) && !is_task_id("../x") && !is_task_id(&t.id.to_uppercase()));
    assert!(!t.is_expired(60_999) && t.is_expired(61_000));
}

#[test]
fn a_round_of_input_is_answered_partially_then_fully() {
    let mut t = task();
    assert!(t.ask(map(json!({"name": elicit("Name?"), "confirm": elicit("Sure?")})), 2_000));
    let wire = Value::Object(t.detailed());
    assert_eq!(wire["status"], "input_required");
    assert_eq!(wire["inputRequests"].as_object().unwrap().len(), 2);

    assert_eq!(t.answer(&map(json!({"name": {"action": "accept"}, "bogus": {}})), 3_000), Ok(true));
    assert_eq!(t.status, TaskStatus::InputRequired, "one answer of two keeps it waiting");
    assert_eq!(t.input_requests.keys().collect::<Vec<_>>(), ["confirm"]);
    assert_eq!(t.answer(&map(json!({"name": {"action": "decline"}})), 3_500), Ok(false), "answered already: ignored");
    assert_eq!(t.answer(&map(json!({"confirm": 12})), 4_000), Err("confirm".into()));
    assert_eq!(t.answer(&map(json!({"confirm": {"action": "accept", "content": {"ok": true}}})), 4_000), Ok(true));
    assert!(t.round_answered());
    assert_eq!(t.status, TaskStatus::Working);
    let answers = t.take_answers();
    assert_eq!(answers["name"], json!({"action": "accept"}));
    assert_eq!(answers["confirm"]["content"]["ok"], true);
    assert!(!t.round_answered(), "a taken round is over");
}

#[test]
fn keys_are_unique_over_the_tasks_lifetime() {
    let mut t = task();
    t.ask(map(json!({"name": elicit("1")})), 2_000);
    t.answer(&map(json!({"name": {"action": "accept"}})), 2_100).unwrap();
    t.take_answers();
    t.ask(map(json!({"name": elicit("2"), "name~2": elicit("3")})), 2_200);
    let mut keys: Vec<_> = t.input_requests.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["name~2", "name~2~2"], "a reused key gets a fresh wire key, and so does a clash with one");
    t.answer(&map(json!({"name": {"action": "accept"}})), 2_300).unwrap();
    assert_eq!(t.status, TaskStatus::InputRequired, "the old key answers nothing now");
    t.answer(&map(json!({"name~2": {"n": 2}, "name~2~2": {"n": 3}})), 2_400).unwrap();
    let answers = t.take_answers();
    let mut handler_keys: Vec<_> = answers.keys().cloned().collect();
    handler_keys.sort();
    assert_eq!(handler_keys, ["name", "name~2"], "answers come back under the handler's own keys");
    assert_eq!(answers["name"], json!({"n": 2}));
}

#[test]
fn terminal_states_never_change_again() {
    let mut t = task();
    assert!(t.complete(json!({"content": [], "isError": true}), 5_000));
    assert_eq!(t.message.as_deref(), Some("The tool reported an error"));
    assert!(!t.cancel(6_000) && !t.fail(&RpcError::internal("x"), 6_000) && !t.set_message("m".into(), 6_000));
    assert!(!t.ask(map(json!({"k": elicit("?")})), 6_000));
    assert_eq!(t.status, TaskStatus::Completed);
    let wire = Value::Object(t.detailed());
    assert_eq!(wire["result"]["isError"], true);
    assert!(wire.get("error").is_none());

    let mut f = task();
    f.ask(map(json!({"k": elicit("?")})), 2_000);
    assert!(f.fail(&RpcError::internal("The replica running it left"), 3_000));
    let wire = Value::Object(f.detailed());
    assert_eq!(wire["error"]["code"], -32603);
    assert_eq!(wire["statusMessage"], "The replica running it left");
    assert!(wire.get("result").is_none() && wire.get("inputRequests").is_none());

    let mut c = task();
    assert!(c.cancel(2_000));
    assert_eq!(Value::Object(c.detailed())["status"], "cancelled");
}

#[test]
fn records_round_trip_and_principals_bind_exactly() {
    let mut t = task();
    t.ask(map(json!({"k": elicit("?")})), 2_000);
    let bytes = serde_json::to_vec(&t).unwrap();
    assert_eq!(serde_json::from_slice::<TaskRecord>(&bytes).unwrap(), t);
    assert_ne!(
        binding(Some(&Principal::new("alice", None))),
        binding(Some(&Principal::new("alice", Some("acme".into()))))
    );
    assert_ne!(binding(Some(&Principal::new("a", Some("b".into())))), binding(Some(&Principal::new("a|b", None))));
    let issued = Principal::new("alice", None).with_issuer("https://other.example");
    assert_ne!(binding(Some(&issued)), binding(Some(&Principal::new("alice", None))), "another issuer's alice");
    assert_eq!(binding(None), "");
}
