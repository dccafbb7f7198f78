//! The call pipeline end to end: unwrapping, wrapping, extractors, and every error code it
//! produces, asserted as the exact JSON a client would see.
#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use abilities::{AbilityError, Caller, Context, ErrorCode, Registry, State, ability};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
    Attachment,
}

/// What the last count was asked for: the handler records its argument here.
static LAST_COUNTED: Mutex<Option<String>> = Mutex::new(None);

/// Count published posts of one type.
#[ability(semantic = "READ", flatten, name = "my-plugin/count-posts")]
fn count_posts(post_type: PostType) -> u64 {
    if let Ok(mut last) = LAST_COUNTED.lock() {
        *last = Some(format!("{post_type:?}"));
    }
    match post_type {
        PostType::Post => 42,
        PostType::Page => 7,
        PostType::Attachment => 0,
    }
}

/// The application's store.
struct Store {
    posts: Vec<(u32, &'static str)>,
    created: AtomicUsize,
}

#[derive(Serialize, JsonSchema)]
struct Post {
    id: u32,
    title: String,
}

/// Get one post.
#[ability(semantic = "READ")]
async fn get_post(store: State<Store>, id: u32) -> Result<Post, AbilityError> {
    store
        .posts
        .iter()
        .find(|(pid, _)| *pid == id)
        .map(|(id, title)| Post {
            id: *id,
            title: (*title).to_owned(),
        })
        .ok_or_else(|| AbilityError::not_found(format!("post {id} does not exist")))
}

/// List post titles.
#[ability(semantic = "READ")]
fn list_titles(store: State<Store>, #[param(default = 10)] limit: u8) -> Vec<String> {
    store
        .posts
        .iter()
        .take(usize::from(limit))
        .map(|(_, t)| (*t).to_owned())
        .collect()
}

/// Create a post; needs a scope.
#[ability(semantic = "CREATE", permission = "posts:write")]
fn create_post(store: State<Store>, title: String) -> Post {
    let id = 100 + store.created.fetch_add(1, Ordering::SeqCst) as u32;
    Post { id, title }
}

/// Echo the request id the context carries.
#[ability(semantic = "READ")]
fn whoami(ctx: &Context) -> Value {
    json!({"request_id": ctx.request_id(), "principal": ctx.caller().principal()})
}

/// Always panics.
#[ability(semantic = "EXECUTE")]
fn explode() -> u8 {
    panic!("boom at /secret/path.rs")
}

/// Panics after an await point.
#[ability(semantic = "EXECUTE")]
async fn explode_later(n: u8) -> u8 {
    std::future::ready(()).await;
    panic!("late boom {n}")
}

/// Fails with a plain message.
#[ability(semantic = "EXECUTE")]
fn refuse() -> Result<u8, String> {
    Err("the moon is not full".to_owned())
}

/// Fails with an application code.
#[ability(semantic = "EXECUTE")]
fn quota() -> Result<(), AbilityError> {
    Err(AbilityError::new(
        ErrorCode::Custom("QUOTA_EXHAUSTED".into()),
        "no calls left",
    ))
}

/// Needs state nobody registered.
#[ability(semantic = "READ")]
fn needs_missing_state(value: State<u128>) -> u128 {
    *value
}

/// Does nothing and returns nothing.
#[ability(semantic = "EXECUTE")]
async fn noop() {}

/// Returns a string that is a number in disguise.
#[ability(semantic = "READ", flatten)]
fn shout(#[param(description = "What to shout.")] words: String) -> String {
    words.to_uppercase()
}

fn registry() -> Registry {
    Registry::collect_in(module_path!()).expect("the test abilities are valid")
}

fn ctx() -> Context {
    // In-process code that may call every ability says so: an unconfigured context is
    // anonymous.
    Context::new()
        .with_request_id("req-1")
        .with_caller(Caller::trusted("local"))
        .with_state(Store {
            posts: vec![(1, "Hello"), (2, "World")],
            created: AtomicUsize::new(0),
        })
}

async fn call(name: &str, args: Value) -> Result<Value, Value> {
    registry()
        .call(ctx(), name, args)
        .await
        .map_err(|e| serde_json::to_value(e).unwrap_or_default())
}

async fn error_code(name: &str, args: Value) -> String {
    match call(name, args).await {
        Ok(v) => panic!("expected an error from {name}, got {v}"),
        Err(e) => e["code"].as_str().unwrap_or_default().to_owned(),
    }
}

#[tokio::test]
async fn flattened_input_is_unwrapped_and_the_output_wrapped() {
    assert_eq!(
        call("my-plugin-count-posts", json!({"input": "post"})).await,
        Ok(json!({"result": 42}))
    );
    assert_eq!(
        LAST_COUNTED.lock().ok().and_then(|l| l.clone()).as_deref(),
        Some("Post")
    );
    assert_eq!(
        call("my-plugin/count-posts", json!({"input": "page"})).await,
        Ok(json!({"result": 7}))
    );
    assert_eq!(
        call("shout", json!({"input": "hi"})).await,
        Ok(json!({"result": "HI"}))
    );
}

#[tokio::test]
async fn struct_output_is_not_wrapped_and_vec_output_is() {
    assert_eq!(
        call("get_post", json!({"id": 2})).await,
        Ok(json!({"id": 2, "title": "World"}))
    );
    assert_eq!(
        call("list_titles", json!({})).await,
        Ok(json!({"result": ["Hello", "World"]}))
    );
    assert_eq!(
        call("list_titles", json!({"limit": 1})).await,
        Ok(json!({"result": ["Hello"]}))
    );
    assert_eq!(call("noop", Value::Null).await, Ok(json!({})));
}

#[tokio::test]
async fn extra_fields_are_accepted_and_ignored() {
    assert_eq!(
        call(
            "get_post",
            json!({"id": 1, "site_id": "x", "verbose": true})
        )
        .await,
        Ok(json!({"id": 1, "title": "Hello"}))
    );
    assert_eq!(
        call(
            "my-plugin-count-posts",
            json!({"input": "post", "extra": [1]})
        )
        .await,
        Ok(json!({"result": 42}))
    );
}

#[tokio::test]
async fn the_context_reaches_handlers() {
    // `Value` may be anything, so its output schema is wrapped like any non-object.
    assert_eq!(
        call("whoami", Value::Null).await,
        Ok(json!({"result": {"request_id": "req-1", "principal": "local"}}))
    );
}

#[tokio::test]
async fn unknown_ability_is_not_found_ability() {
    assert_eq!(
        call("nope", json!({})).await,
        Err(
            json!({"code": "NOT_FOUND_ABILITY", "message": "no ability named 'nope'", "details": {"name": "nope"}})
        )
    );
    let long = "n".repeat(10_000);
    let err = call(&long, json!({})).await.err().unwrap_or_default();
    assert!(
        err["message"].as_str().is_some_and(|m| m.len() < 200),
        "long names are cut"
    );
}

#[tokio::test]
async fn missing_parameter_names_it() {
    assert_eq!(
        call("get_post", json!({})).await,
        Err(json!({
            "code": "VALIDATION_MISSING_PARAM",
            "message": "missing required parameter 'id'",
            "details": {"violations": [
                {"pointer": "/id", "code": "VALIDATION_MISSING_PARAM", "message": "missing required parameter 'id'"}
            ]}
        }))
    );
    assert_eq!(
        error_code("my-plugin-count-posts", json!({})).await,
        "VALIDATION_MISSING_PARAM"
    );
}

#[tokio::test]
async fn wrong_types_are_reported_with_pointers() {
    assert_eq!(
        call("get_post", json!({"id": "one"})).await,
        Err(json!({
            "code": "VALIDATION_INVALID_TYPE",
            "message": "parameter 'id' must be integer, got string",
            "details": {"violations": [
                {"pointer": "/id", "code": "VALIDATION_INVALID_TYPE", "message": "parameter 'id' must be integer, got string"}
            ]}
        }))
    );
    assert_eq!(
        error_code("get_post", json!([1])).await,
        "VALIDATION_INVALID_TYPE"
    );
    assert_eq!(
        error_code("get_post", json!("id")).await,
        "VALIDATION_INVALID_TYPE"
    );
    // Validation passes (1.5 is a number, the schema says integer) only where serde is stricter.
    assert_eq!(
        error_code("get_post", json!({"id": 1.5})).await,
        "VALIDATION_INVALID_TYPE"
    );
}

#[tokio::test]
async fn every_violation_is_reported_and_the_most_telling_code_wins() {
    let err = call("my-plugin-count-posts", json!({"input": "video"}))
        .await
        .err()
        .unwrap_or_default();
    assert_eq!(err["code"], "VALIDATION_INVALID_VALUE");
    assert_eq!(err["details"]["violations"][0]["pointer"], "/input");

    let err = call("list_titles", json!({"limit": 256}))
        .await
        .err()
        .unwrap_or_default();
    assert_eq!(err["code"], "VALIDATION_INVALID_VALUE");
    assert_eq!(err["details"]["violations"][0]["pointer"], "/limit");

    let err = call("create_post", json!({"title": 5}))
        .await
        .err()
        .unwrap_or_default();
    assert_eq!(err["code"], "VALIDATION_INVALID_TYPE");
}

#[tokio::test]
async fn several_violations_at_once() {
    let err = registry()
        .call(ctx(), "get_post", json!({"id": -1}))
        .await
        .err()
        .map(|e| e.code().clone());
    assert_eq!(err, Some(ErrorCode::ValidationInvalidValue));
}

#[tokio::test]
async fn permission_is_checked_before_anything_runs() {
    let registry = registry();
    let reader = ctx().with_caller(Caller::new("bob", ["posts:read"]));
    let err = registry
        .call(reader, "create_post", json!({"title": "x"}))
        .await
        .err();
    assert_eq!(
        err.map(|e| serde_json::to_value(e).unwrap_or_default()),
        Some(json!({
            "code": "PERMISSION_DENIED",
            "message": "'create_post' requires the scope 'posts:write'",
            "details": {"required_scope": "posts:write"}
        }))
    );
    // Denied even with invalid arguments: nothing about the input is revealed.
    let anonymous = ctx().with_caller(Caller::anonymous());
    let err = registry
        .call(anonymous, "create_post", json!({}))
        .await
        .err()
        .map(|e| e.code().clone());
    assert_eq!(err, Some(ErrorCode::PermissionDenied));

    let writer = ctx().with_caller(Caller::new("alice", ["posts:write"]));
    let created = registry
        .call(writer, "create_post", json!({"title": "x"}))
        .await;
    assert_eq!(created.ok(), Some(json!({"id": 100, "title": "x"})));
}

#[tokio::test]
async fn handler_errors_keep_their_codes() {
    assert_eq!(
        call("get_post", json!({"id": 9})).await,
        Err(json!({"code": "NOT_FOUND_RESOURCE", "message": "post 9 does not exist"}))
    );
    assert_eq!(
        call("refuse", json!({})).await,
        Err(json!({"code": "EXECUTION_FAILED", "message": "the moon is not full"}))
    );
    assert_eq!(
        call("quota", json!({})).await,
        Err(json!({"code": "QUOTA_EXHAUSTED", "message": "no calls left"}))
    );
}

#[tokio::test]
async fn panics_become_internal_errors_without_leaking_and_the_registry_keeps_serving() {
    let registry = registry();
    for (name, args) in [("explode", json!({})), ("explode_later", json!({"n": 3}))] {
        let err = registry
            .call(ctx(), name, args)
            .await
            .err()
            .map(|e| serde_json::to_value(e).unwrap_or_default());
        assert_eq!(
            err,
            Some(
                json!({"code": "INTERNAL_ERROR", "message": format!("'{name}' failed unexpectedly")})
            )
        );
    }
    let ok = registry.call(ctx(), "get_post", json!({"id": 1})).await;
    assert_eq!(ok.ok(), Some(json!({"id": 1, "title": "Hello"})));
}

#[tokio::test]
async fn missing_state_is_an_internal_error() {
    assert_eq!(
        call("needs_missing_state", json!({})).await,
        Err(
            json!({"code": "INTERNAL_ERROR", "message": "the server is missing application state this ability needs"})
        )
    );
}

#[tokio::test]
async fn concurrent_calls_share_one_registry() {
    let registry = std::sync::Arc::new(registry());
    let ctx = ctx();
    let tasks: Vec<_> = (0..64u32)
        .map(|i| {
            let (registry, ctx) = (registry.clone(), ctx.clone());
            tokio::spawn(async move { registry.call(ctx, "get_post", json!({"id": i % 3})).await })
        })
        .collect();
    let mut found = 0;
    for task in tasks {
        if task.await.ok().and_then(Result::ok).is_some() {
            found += 1;
        }
    }
    assert_eq!(
        found,
        64 - 22,
        "ids 1 and 2 exist; 0 (asked 22 times) does not"
    );
}
