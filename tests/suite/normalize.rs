//! Every row of the normalizer table (see the `normalize` module docs): missing / `null` /
//! `{}` arguments against no-input, object and flattened abilities, with and without defaults.
//! In process, "missing" and `null` are both `Value::Null`; transports map an absent
//! `arguments` to it.

use abilities::{Context, Registry, ability};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// No input at all.
#[ability(semantic = "READ")]
fn no_input() -> &'static str {
    "ran"
}

/// One required parameter.
#[ability(semantic = "READ")]
fn object_required(a: u8) -> u8 {
    a
}

/// Only optional parameters, one with a default.
#[ability(semantic = "READ")]
fn object_optional(a: Option<u8>, #[param(default = 5)] b: u8) -> (Option<u8>, u8) {
    (a, b)
}

/// A flattened string, no default.
#[ability(semantic = "READ", flatten)]
fn flat(x: String) -> String {
    x
}

/// A flattened string with a default.
#[ability(semantic = "READ", flatten)]
fn flat_default(#[param(default = "post".to_owned())] x: String) -> String {
    x
}

/// A flattened optional string.
#[ability(semantic = "READ", flatten)]
fn flat_nullable(x: Option<String>) -> Option<String> {
    x
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Query {
    term: Option<String>,
    #[serde(default)]
    page: u32,
}

/// A flattened struct: an object, so it passes unwrapped.
#[ability(semantic = "READ", flatten)]
fn flat_struct(q: Query) -> Query {
    q
}

/// A flattened struct with a default.
#[ability(semantic = "READ", flatten)]
fn flat_struct_default(
    #[param(default = Query { term: Some("all".into()), page: 9 })] q: Query,
) -> Query {
    q
}

async fn call(name: &str, args: Value) -> Result<Value, String> {
    let registry = Registry::collect_in(module_path!()).map_err(|e| e.to_string())?;
    registry
        .call(Context::new(), name, args)
        .await
        .map_err(|e| e.code().to_string())
}

fn ok(v: Value) -> Result<Value, String> {
    Ok(v)
}

fn err(code: &str) -> Result<Value, String> {
    Err(code.to_owned())
}

#[tokio::test]
async fn no_input_accepts_missing_null_empty_and_extras() {
    for args in [
        Value::Null,
        json!({}),
        json!({"input": null}),
        json!({"anything": 1}),
    ] {
        assert_eq!(call("no_input", args).await, ok(json!({"result": "ran"})));
    }
}

#[tokio::test]
async fn object_input_with_a_required_parameter() {
    assert_eq!(
        call("object_required", Value::Null).await,
        err("VALIDATION_MISSING_PARAM")
    );
    assert_eq!(
        call("object_required", json!({})).await,
        err("VALIDATION_MISSING_PARAM")
    );
    assert_eq!(
        call("object_required", json!({"a": null})).await,
        err("VALIDATION_INVALID_TYPE")
    );
    assert_eq!(
        call("object_required", json!({"a": 3})).await,
        ok(json!({"result": 3}))
    );
}

#[tokio::test]
async fn object_input_with_only_optional_parameters_takes_the_defaults() {
    for args in [Value::Null, json!({})] {
        assert_eq!(
            call("object_optional", args).await,
            ok(json!({"result": [null, 5]}))
        );
    }
    assert_eq!(
        call("object_optional", json!({"a": null})).await,
        ok(json!({"result": [null, 5]}))
    );
    assert_eq!(
        call("object_optional", json!({"a": 1, "b": 2})).await,
        ok(json!({"result": [1, 2]}))
    );
}

#[tokio::test]
async fn flattened_without_default_requires_input() {
    for args in [Value::Null, json!({}), json!({"input": null})] {
        let expected = if args == json!({"input": null}) {
            "VALIDATION_INVALID_TYPE"
        } else {
            "VALIDATION_MISSING_PARAM"
        };
        assert_eq!(call("flat", args).await, err(expected));
    }
    assert_eq!(
        call("flat", json!({"input": "x"})).await,
        ok(json!({"result": "x"}))
    );
}

#[tokio::test]
async fn flattened_with_default_fills_it_in() {
    for args in [Value::Null, json!({}), json!({"input": null})] {
        assert_eq!(
            call("flat_default", args).await,
            ok(json!({"result": "post"}))
        );
    }
    assert_eq!(
        call("flat_default", json!({"input": "page"})).await,
        ok(json!({"result": "page"}))
    );
}

#[tokio::test]
async fn flattened_nullable_means_null_when_absent() {
    for args in [Value::Null, json!({}), json!({"input": null})] {
        assert_eq!(
            call("flat_nullable", args).await,
            ok(json!({"result": null}))
        );
    }
    assert_eq!(
        call("flat_nullable", json!({"input": "x"})).await,
        ok(json!({"result": "x"}))
    );
}

#[tokio::test]
async fn flattened_struct_is_the_arguments_object() {
    for args in [Value::Null, json!({})] {
        assert_eq!(
            call("flat_struct", args).await,
            ok(json!({"term": null, "page": 0}))
        );
    }
    assert_eq!(
        call("flat_struct", json!({"term": "a", "page": 2})).await,
        ok(json!({"term": "a", "page": 2}))
    );
    for args in [Value::Null, json!({})] {
        assert_eq!(
            call("flat_struct_default", args).await,
            ok(json!({"term": "all", "page": 9}))
        );
    }
    assert_eq!(
        call("flat_struct_default", json!({"page": 1})).await,
        ok(json!({"term": null, "page": 1}))
    );
}

#[tokio::test]
async fn non_object_arguments_are_rejected_for_every_kind() {
    for name in [
        "no_input",
        "object_required",
        "object_optional",
        "flat",
        "flat_default",
        "flat_struct",
    ] {
        for args in [json!(1), json!("post"), json!([1]), json!(true)] {
            assert_eq!(
                call(name, args).await,
                err("VALIDATION_INVALID_TYPE"),
                "{name}"
            );
        }
    }
}
