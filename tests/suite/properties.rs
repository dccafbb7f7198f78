//! Property tests of the entry points a hostile client reaches, the same ones the `cargo fuzz`
//! targets in `fuzz/` drive (`tests/suite/fuzzing.rs` is their one harness): generated stdio
//! input, tool arguments, MCP-AQL requests, URI templates and sealed states or tokens. Each
//! case asserts an answer of the right shape and a server that goes on serving.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::fuzzing;

use fuzzing::Harness;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

fn text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

/// Keys a client might send: the parameters' own, MCP-AQL's, and others.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "title",
            "count",
            "tags",
            "draft",
            "author",
            "name",
            "email",
            "secret",
            "input",
            "id",
            "site_id",
            "filter",
            "sort",
            "limit",
            "offset",
            "fields",
            "aggregate",
            "cursor",
            "page",
            "field",
            "op",
            "value",
            "_confirmation",
            "operation",
            "params",
            "$ref",
            "__proto__",
        ])
        .prop_map(str::to_owned),
        text(12),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u8>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text(24).prop_map(Value::from),
        prop::sample::select(vec![
            "post", "page", "true", "yes", "1", "0", "-3", "1e3", "asc", "desc", "eq", "gt",
            "contains", "count", "sum", "title", "score", "tags",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

#[test]
fn tool_arguments_always_get_a_validation_answer_or_a_result() {
    let harness = Harness::new();
    let args = prop::collection::vec((key(), json_value()), 0..8)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect()));
    runner(160)
        .run(&args, |args| {
            harness.tool_arguments(&args);
            Ok(())
        })
        .unwrap();
}

#[test]
fn mcp_aql_always_answers_with_an_envelope() {
    let harness = Harness::new();
    let operation = prop::sample::select(vec![
        "harness_list",
        "harness_count",
        "harness_create",
        "harness_delete",
        "introspect",
        "nope",
    ]);
    let request = (operation, json_value(), any::<bool>()).prop_map(|(op, params, as_object)| {
        if as_object {
            json!({"operation": op, "params": params})
        } else {
            json!({"operation": op, "params": {"filter": params, "sort": "score", "limit": 3}})
        }
    });
    runner(200)
        .run(&request, |request| {
            harness.aql(&request);
            Ok(())
        })
        .unwrap();
    // Whole requests of any shape too.
    runner(100)
        .run(&json_value(), |request| {
            harness.aql(&request);
            Ok(())
        })
        .unwrap();
}

/// Lines a client might write: JSON-RPC-like messages with arbitrary parts, batches, raw
/// bytes.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec![
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "prompts/get",
        "initialize",
        "notifications/initialized",
        "nope",
    ]);
    (method, json_value(), json_value(), any::<bool>()).prop_map(|(method, id, params, with_id)| {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if with_id {
            message["id"] = id;
        }
        message.to_string().into_bytes()
    })
}

fn stdio_input() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        4 => message(),
        1 => prop::collection::vec(message(), 0..4).prop_map(|members| {
            let mut line = b"[".to_vec();
            line.extend(members.join(&b","[..]));
            line.push(b']');
            line
        }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
    ];
    prop::collection::vec(line, 0..6).prop_map(|lines| lines.join(&b"\n"[..]))
}

#[test]
fn stdio_answers_and_keeps_serving_whatever_arrives() {
    let harness = Harness::new();
    runner(120)
        .run(&stdio_input(), |input| {
            harness.stdio(&input);
            Ok(())
        })
        .unwrap();
}

#[test]
fn uri_templates_match_what_they_make() {
    let piece = prop_oneof![
        prop::sample::select(vec!["/", "-", ".", "/x/", "~", "%", "a", "{", "}", "::"])
            .prop_map(str::to_owned),
        Just("{v}".to_owned()),
        Just("{w}".to_owned()),
        Just("{id}".to_owned()),
    ];
    let case = (
        prop::collection::vec(piece, 1..7),
        text(20),
        prop::collection::vec(text(8), 3),
    )
        .prop_map(|(pieces, uri, values)| (format!("x://{}", pieces.concat()), uri, values));
    runner(2000)
        .run(&case, |(template, uri, values)| {
            fuzzing::uri_template(&template, &uri, &values);
            Ok(())
        })
        .unwrap();
}

#[test]
fn forged_states_and_tokens_are_refused() {
    let harness = Harness::new();
    let forged = prop_oneof![
        text(64),
        prop::collection::vec(any::<u8>(), 0..80).prop_map(|bytes| {
            use std::fmt::Write as _;
            bytes.iter().fold(String::from("conf_"), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            })
        }),
    ];
    runner(100)
        .run(&forged, |text| {
            harness.sealed(&text);
            Ok(())
        })
        .unwrap();
}
