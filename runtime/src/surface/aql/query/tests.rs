//! Queries parsed and applied over a small item list.

use serde_json::{Map, Value, json};

use super::*;

fn schema() -> Map<String, Value> {
    match json!({"type": "object", "properties": {
        "id": {"type": "integer"}, "title": {"type": "string"},
        "priority": {"type": "string"}, "size": {"type": "integer"}
    }}) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn items() -> Value {
    json!([
        {"id": 1, "title": "a", "priority": "high", "size": 10},
        {"id": 2, "title": "b", "priority": "low", "size": 20},
        {"id": 3, "title": "c", "priority": "high", "size": 30},
        {"id": 4, "title": "d", "priority": "low", "size": 5}
    ])
}

fn run(params: Value) -> Result<Value, AbilityError> {
    let Value::Object(mut params) = params else {
        panic!("params")
    };
    let spec = parse(&mut params, &schema(), &[], &[])?;
    Ok(apply(&State::new(spec), items(), None, &schema(), &[]).0)
}

#[test]
fn filter_sort_page_select() {
    let out = run(json!({
        "filter": {"priority": "high", "size": {"gte": 10}},
        "sort": {"field": "size", "order": "desc"},
        "fields": ["id"],
        "limit": 1
    }))
    .unwrap();
    assert_eq!(
        out,
        json!({"items": [{"id": 3}], "pagination": {
            "limit": 1, "offset": 0, "returned": 1, "total_items": 2, "has_more": true}})
    );
}

#[test]
fn cursors_walk_forward_and_back() {
    let first = run(json!({"first": 2})).unwrap();
    assert_eq!(
        first["items"],
        json!([
            {"id": 1, "title": "a", "priority": "high", "size": 10},
            {"id": 2, "title": "b", "priority": "low", "size": 20}
        ])
    );
    assert_eq!(first["pageInfo"]["hasNextPage"], true);
    let end = first["pageInfo"]["endCursor"].clone();
    let next = run(json!({"first": 2, "after": end, "fields": "minimal"})).unwrap();
    assert_eq!(
        next["items"],
        json!([{"id": 3, "title": "c"}, {"id": 4, "title": "d"}])
    );
    assert_eq!(next["pageInfo"]["hasNextPage"], false);
    assert_eq!(next["pageInfo"]["hasPreviousPage"], true);
    let before = next["pageInfo"]["startCursor"].clone();
    let back = run(json!({"last": 1, "before": before, "fields": ["id"]})).unwrap();
    assert_eq!(back["items"], json!([{"id": 2}]));
}

#[test]
fn aggregations() {
    let out = run(json!({"aggregate": {
        "total": {"count": true},
        "by_priority": {"group_by": "priority"},
        "size_by_priority": {"group_by": "priority", "sum": "size"},
        "average": {"avg": "size"},
        "largest": {"max": "size"}
    }}))
    .unwrap();
    assert_eq!(
        out,
        json!({"aggregations": {
            "total": 4,
            "by_priority": {"high": 2, "low": 2},
            "size_by_priority": {"high": 40, "low": 25},
            "average": 16.25,
            "largest": 30
        }})
    );
}

#[test]
fn bad_queries_are_rejected() {
    for (params, code) in [
        (json!({"first": 1, "last": 1}), "VALIDATION_INVALID_TYPE"),
        (json!({"after": "x"}), "VALIDATION_INVALID_VALUE"),
        (json!({"limit": 1, "first": 1}), "VALIDATION_INVALID_TYPE"),
        (
            json!({"filter": {"colour": "red"}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"sort": {"field": "id", "order": "up"}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (json!({"fields": "tiny"}), "VALIDATION_INVALID_VALUE"),
        (
            json!({"aggregate": {"x": {"median": "size"}}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (json!({"limit": -1}), "VALIDATION_INVALID_TYPE"),
        // A path through a field that is not an object.
        (
            json!({"filter": {"title.length": {"gt": 3}}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (json!({"fields": ["size.unit"]}), "VALIDATION_INVALID_VALUE"),
        (
            json!({"filter": {"id": {"like": "%"}}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (
            json!({"filter": {"id": {"in": 3}}}),
            "VALIDATION_INVALID_TYPE",
        ),
        (json!({"first": 1.5}), "VALIDATION_INVALID_TYPE"),
    ] {
        let error = run(params.clone()).unwrap_err();
        assert_eq!(error.code().as_str(), code, "{params}");
    }
}
