//! Middleware as a user writes it: a check that refuses with a typed error or changes the
//! arguments (as sent, or validated), an `around` that changes the output or answers in the
//! handler's place, a watcher that hears every outcome (refusals by the built-ins too), the
//! scoping to a category or one ability, `tower` layers (a concurrency limit, a timeout), a
//! panicking middleware, and the chain of built-ins reordered and cut short, as a client
//! sees all of it on the wire.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::tool_error;
use abilities::middleware::{
    Builtin, CallRef, Chain, Invocation, Layered, Middleware, Next, Only, Place, Running, Watcher,
};
use abilities::{
    Ability, AbilityError, Caller, Context, ErrorCode, Server, ServerBuilder, ability,
};
use serde_json::{Value, json};

/// Look a customer up (billing).
#[ability(
    semantic = "READ",
    category = "billing",
    meta(owner = "billing", tier = 2, pii = true, delta = -3)
)]
fn customer(id: u64) -> Value {
    json!({ "id": id, "name": "Ada", "email": "ada@example.com" })
}

/// Refund an order (billing, needs a scope).
#[ability(
    semantic = "UPDATE",
    category = "billing",
    permission = "billing:write",
    rate = "1/min"
)]
fn refund(order: u64) -> u64 {
    order
}

/// Echo a word (flattened).
#[ability(semantic = "READ", flatten)]
fn shout(word: String) -> String {
    word.to_uppercase()
}

/// Wait a while, counting how many wait at once.
#[ability(semantic = "READ")]
async fn slow(ms: u64) -> u64 {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    ms
}

/// Wait a while.
#[ability(semantic = "READ")]
async fn sleepy(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn server(builder: ServerBuilder) -> Server {
    builder.build().expect("the server builds")
}

async fn call(server: &Server, caller: Option<Caller>, name: &str, args: Value) -> Value {
    let client = server.connect_as(caller).await.unwrap();
    let result = client.call(name, args).await.unwrap();
    client.close().await;
    serde_json::to_value(result).unwrap()
}

fn code(result: &Value) -> String {
    tool_error(result)["code"].as_str().unwrap().to_owned()
}

/// Refuses what a caller named `mallory` calls, and records what it saw.
#[derive(Default)]
struct Policy {
    seen: Mutex<Vec<(String, String, Value)>>,
}

impl Middleware for Policy {
    fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        self.seen.lock().unwrap().push((
            call.ability().name().to_owned(),
            call.surface().to_owned(),
            call.arguments().clone(),
        ));
        if call.caller().principal() == "mallory" {
            return Err(
                AbilityError::new(ErrorCode::PermissionDenied, "not for mallory")
                    .with_details(json!({ "policy": "no-mallory" })),
            );
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_check_refuses_with_its_typed_error_and_sees_validated_arguments() {
    let policy = Arc::new(Policy::default());
    let server = server(builder!().middleware(Arc::clone(&policy)));
    let mallory = Some(Caller::new("mallory", ["billing:write"]));
    let refused = call(&server, mallory, "customer", json!({"id": 7})).await;
    let error = tool_error(&refused);
    assert_eq!(error["code"], "PERMISSION_DENIED");
    assert_eq!(error["message"], "not for mallory");
    assert_eq!(error["details"]["policy"], "no-mallory");

    let ok = call(&server, None, "shout", json!({"input": "hi"})).await;
    assert_eq!(ok["structuredContent"], json!({"result": "HI"}), "{ok}");
    let seen = policy.seen.lock().unwrap().clone();
    // The flattened input arrives bare, as the handler gets it; the surface is named.
    assert_eq!(
        seen,
        [
            ("customer".to_owned(), "native".to_owned(), json!({"id": 7})),
            ("shout".to_owned(), "native".to_owned(), json!("hi")),
        ]
    );
}

#[tokio::test]
async fn a_check_runs_after_validation_and_never_for_invalid_arguments() {
    let policy = Arc::new(Policy::default());
    let server = server(builder!().middleware(Arc::clone(&policy)));
    let invalid = call(&server, None, "customer", json!({"id": "seven"})).await;
    assert_eq!(code(&invalid), "VALIDATION_INVALID_TYPE");
    assert!(policy.seen.lock().unwrap().is_empty());
}

/// Adds a default page size among the arguments as sent, before validation.
struct DefaultId;

impl Middleware for DefaultId {
    fn place(&self) -> Place {
        Place::Arguments
    }

    fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        let args = call.arguments_mut().as_object_mut().expect("an object");
        args.entry("id").or_insert(json!(42));
        Ok(())
    }
}

#[tokio::test]
async fn a_check_among_the_arguments_as_sent_changes_them_before_validation() {
    let server = server(builder!().middleware(Only::ability("customer", DefaultId)));
    let ok = call(&server, None, "customer", json!({})).await;
    assert_eq!(ok["structuredContent"]["result"]["id"], 42, "{ok}");
    // Only that ability: another without the argument is still refused by validation.
    let refused = call(&server, None, "refund", json!({})).await;
    assert_eq!(code(&refused), "VALIDATION_MISSING_PARAM");
}

/// Replaces every `email` in an output with `[redacted]`.
struct Redact;

fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "email" {
                    *value = json!("[redacted]");
                } else {
                    redact(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

impl Middleware for Redact {
    fn around(&self, call: Invocation, next: Next) -> Running {
        Box::pin(async move {
            let mut output = next.run(call).await?;
            if let Some(value) = output.value_mut() {
                redact(value);
            }
            Ok(output)
        })
    }
}

#[tokio::test]
async fn an_around_changes_the_output_for_one_category() {
    let server = server(builder!().middleware(Only::category("billing", Redact)));
    let result = call(&server, None, "customer", json!({"id": 1})).await;
    assert_eq!(
        result["structuredContent"]["result"],
        json!({"id": 1, "name": "Ada", "email": "[redacted]"})
    );
    // The text block carries the same, redacted JSON.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["result"]["email"], "[redacted]");
}

/// Rewrites one argument before the handler gets it.
struct Cached;

impl Middleware for Cached {
    fn around(&self, mut call: Invocation, next: Next) -> Running {
        if call.arguments() == &json!("cached") {
            *call.arguments_mut() = json!("from the cache");
        }
        next.run(call)
    }
}

#[tokio::test]
async fn an_around_changes_the_arguments_the_handler_gets() {
    let server = server(builder!().middleware(Cached));
    let result = call(&server, None, "shout", json!({"input": "cached"})).await;
    assert_eq!(result["structuredContent"]["result"], "FROM THE CACHE");
}

/// Hears every outcome: `(ability, outcome code)`.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<(String, String)>>>);

impl Middleware for Outcomes {
    fn watch(&self, ability: &Ability, _ctx: &Context, _arguments: &Value) -> Option<Watcher> {
        let (me, name) = (self.clone(), ability.name().to_owned());
        Some(Box::new(move |outcome| {
            let code = match outcome {
                Ok(_) => "OK".to_owned(),
                Err(error) => error.code().as_str().to_owned(),
            };
            me.0.lock().unwrap().push((name, code));
        }))
    }
}

#[tokio::test]
async fn a_watcher_hears_every_outcome_refusals_by_the_builtins_too() {
    let outcomes = Outcomes::default();
    let server = server(
        builder!()
            .local_scopes(["nothing"])
            .middleware(outcomes.clone()),
    );
    call(&server, None, "customer", json!({"id": 1})).await;
    call(&server, None, "refund", json!({"order": 1})).await;
    call(&server, None, "customer", json!({"id": "x"})).await;
    assert_eq!(
        outcomes.0.lock().unwrap().clone(),
        [
            ("customer".to_owned(), "OK".to_owned()),
            ("refund".to_owned(), "PERMISSION_DENIED".to_owned()),
            ("customer".to_owned(), "VALIDATION_INVALID_TYPE".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_tower_concurrency_limit_holds_for_one_ability() {
    PEAK.store(0, Ordering::SeqCst);
    let limit = Layered::new(tower::limit::ConcurrencyLimitLayer::new(2));
    let server = Arc::new(server(builder!().middleware(Only::ability("slow", limit))));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let server = Arc::clone(&server);
        calls.spawn(async move { call(&server, None, "slow", json!({"ms": 60})).await });
    }
    while let Some(done) = calls.join_next().await {
        assert_eq!(done.unwrap()["structuredContent"]["result"], 60);
    }
    assert_eq!(PEAK.load(Ordering::SeqCst), 2, "two at a time, never more");
}

#[tokio::test]
async fn tower_errors_come_back_typed() {
    let shed = Layered::new(
        tower::ServiceBuilder::new()
            .layer(tower::load_shed::LoadShedLayer::new())
            .layer(tower::limit::ConcurrencyLimitLayer::new(1)),
    );
    let timeout = Layered::new(tower::timeout::TimeoutLayer::new(Duration::from_millis(20)));
    let server = Arc::new(server(
        builder!()
            .middleware(Only::ability("sleepy", shed))
            .middleware(Only::ability("sleepy", timeout)),
    ));
    // The first holds the only permit (and times out); the second is shed at once.
    let first = {
        let server = Arc::clone(&server);
        tokio::spawn(async move { call(&server, None, "sleepy", json!({"ms": 300})).await })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = call(&server, None, "sleepy", json!({"ms": 1})).await;
    assert_eq!(code(&second), "LIMIT_EXCEEDED", "{second}");
    let first = first.await.unwrap();
    assert_eq!(code(&first), "TIMEOUT", "{first}");
    // The permit came back: the next call runs.
    let third = call(&server, None, "sleepy", json!({"ms": 1})).await;
    assert_eq!(third["structuredContent"]["result"], 1, "{third}");
}

struct Panics;

impl Middleware for Panics {
    fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        assert_ne!(call.ability().name(), "customer", "a bug in a middleware");
        Ok(())
    }

    fn around(&self, call: Invocation, next: Next) -> Running {
        assert_ne!(call.ability().name(), "refund", "a bug in an around");
        next.run(call)
    }
}

#[tokio::test]
async fn a_panicking_middleware_fails_its_call_and_the_server_serves_on() {
    let server = server(builder!().middleware(Panics));
    let checked = call(&server, None, "customer", json!({"id": 1})).await;
    assert_eq!(code(&checked), "INTERNAL_ERROR");
    let wrapped = call(&server, None, "refund", json!({"order": 1})).await;
    assert_eq!(code(&wrapped), "INTERNAL_ERROR");
    let ok = call(&server, None, "shout", json!({"input": "on"})).await;
    assert_eq!(ok["structuredContent"]["result"], "ON");
}

#[tokio::test]
async fn the_builtins_are_links_a_chain_reorders_and_removes() {
    assert_eq!(
        Chain::default().names(),
        [
            "idempotency",
            "traces",
            "metrics",
            "audit",
            "permission",
            "rate",
            "site",
            "confirmation"
        ]
    );
    let unscoped = || Some(Caller::new("eve", ["other"]));

    // By default the permission check comes first: a refused call does not spend the rate.
    let default = server(builder!());
    for _ in 0..2 {
        let refused = call(&default, unscoped(), "refund", json!({"order": 1})).await;
        assert_eq!(code(&refused), "PERMISSION_DENIED");
    }

    // The rate moved before the permission check: the first refusal spends the budget.
    let reordered = Chain::default().move_before(Builtin::Rate, Builtin::Permission);
    assert_eq!(
        reordered.names(),
        [
            "idempotency",
            "traces",
            "metrics",
            "audit",
            "rate",
            "permission",
            "site",
            "confirmation"
        ]
    );
    let same = Chain::default().move_before(Builtin::Rate, Builtin::Rate);
    assert_eq!(same.names(), Chain::default().names());
    let rate_first = server(builder!().chain(reordered));
    let refused = call(&rate_first, unscoped(), "refund", json!({"order": 1})).await;
    assert_eq!(code(&refused), "PERMISSION_DENIED");
    let limited = call(&rate_first, unscoped(), "refund", json!({"order": 1})).await;
    assert_eq!(code(&limited), "RATE_LIMITED");

    // Without the permission check, the scope is not asked for.
    let open = server(builder!().chain(Chain::default().without(Builtin::Permission)));
    let ran = call(&open, unscoped(), "refund", json!({"order": 9})).await;
    assert_eq!(ran["structuredContent"]["result"], 9, "{ran}");
}

#[tokio::test]
async fn a_replaced_builtin_runs_where_it_is_put() {
    /// Permission by category instead of by scope.
    struct BillingStaff;
    impl Middleware for BillingStaff {
        fn name(&self) -> &str {
            "billing-staff"
        }
        fn place(&self) -> Place {
            Place::Arguments
        }
        fn applies_to(&self, ability: &Ability) -> bool {
            ability.category() == Some("billing")
        }
        fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
            if call.caller().has_scope("staff") {
                Ok(())
            } else {
                Err(AbilityError::new(ErrorCode::PermissionDenied, "staff only"))
            }
        }
    }
    let chain = Chain::default()
        .with_before(Builtin::Permission, BillingStaff)
        .without(Builtin::Permission);
    assert_eq!(
        chain.names(),
        [
            "idempotency",
            "traces",
            "metrics",
            "audit",
            "billing-staff",
            "rate",
            "site",
            "confirmation"
        ]
    );
    let server = server(builder!().chain(chain));
    let staff = call(
        &server,
        Some(Caller::new("s", ["staff"])),
        "refund",
        json!({"order": 2}),
    )
    .await;
    assert_eq!(staff["structuredContent"]["result"], 2, "{staff}");
    let other = call(
        &server,
        Some(Caller::new("o", ["billing:write"])),
        "customer",
        json!({"id": 1}),
    )
    .await;
    let error = tool_error(&other);
    assert_eq!(error["message"], "staff only");
    // Not billing: not its business.
    let shout = call(
        &server,
        Some(Caller::new("o", [] as [&str; 0])),
        "shout",
        json!({"input": "a"}),
    )
    .await;
    assert_eq!(shout["structuredContent"]["result"], "A");
}

#[tokio::test]
async fn middleware_holds_on_every_surface() {
    let policy = Arc::new(Policy::default());
    let mallory = || Some(Caller::new("mallory", ["billing:write"]));
    let surfaces = [
        (abilities::Surface::Standard, "customer", json!({"id": 1})),
        (
            abilities::Surface::meta(),
            "mcp-adapter-execute-ability",
            json!({"ability_name": "customer", "parameters": {"id": 1}}),
        ),
        (
            abilities::Surface::aql_single(),
            "mcp_aql",
            json!({"operation": "customer", "params": {"id": 1}}),
        ),
    ];
    for (surface, name, args) in surfaces {
        let server = server(builder!().surface(surface).middleware(Arc::clone(&policy)));
        let client = server.connect_as(mallory()).await.unwrap();
        let answer = client.call(name, args).await;
        let text = format!("{answer:?}");
        assert!(text.contains("not for mallory"), "{name}: {text}");
        assert!(text.contains("PERMISSION_DENIED"), "{name}: {text}");
        client.close().await;
    }
    let surfaces: Vec<String> = policy
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.1.clone())
        .collect();
    assert_eq!(surfaces, ["standard", "meta", "aql"]);
}

#[tokio::test]
async fn declared_meta_is_the_tools_meta_and_what_a_middleware_reads() {
    /// Marks outputs of abilities whose `_meta` says they hold personal data.
    struct MarkPii;
    impl Middleware for MarkPii {
        fn around(&self, call: Invocation, next: Next) -> Running {
            Box::pin(async move {
                let mut output = next.run(call).await?;
                if let Some(Value::Object(map)) = output.value_mut() {
                    map.insert("pii".to_owned(), json!(true));
                }
                Ok(output)
            })
        }
    }
    let pii = |a: &Ability| a.meta().get("pii") == Some(&json!(true));
    let server = server(builder!().middleware(Only::matching(pii, MarkPii)));
    let client = server.connect().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    let listed = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(tool).unwrap()
    };
    assert_eq!(
        listed("customer")["_meta"],
        json!({"owner": "billing", "tier": 2, "pii": true, "delta": -3})
    );
    assert!(
        listed("refund").get("_meta").is_none(),
        "none declared: none sent"
    );
    let customer = client.call("customer", json!({"id": 3})).await.unwrap();
    let customer = serde_json::to_value(customer).unwrap();
    assert_eq!(customer["structuredContent"]["result"]["pii"], true);
    let shout = client.call("shout", json!({"input": "x"})).await.unwrap();
    assert_eq!(
        serde_json::to_value(shout).unwrap()["structuredContent"],
        json!({"result": "X"})
    );
    client.close().await;

    let built = Ability::builder("notes/read", abilities::Semantic::Read)
        .description("Read a note.")
        .meta("owner", "notes")
        .handler(|_ctx, _args: Value| async move { Ok(json!({})) })
        .build()
        .unwrap();
    assert_eq!(built.meta().get("owner"), Some(&json!("notes")));
}

/// Answers `shout` from a cache, without running it.
struct FromCache;

impl Middleware for FromCache {
    fn around(&self, call: Invocation, next: Next) -> Running {
        if call.arguments() == &json!("cached") {
            let answer = call.output(json!("FROM THE CACHE"));
            return Box::pin(std::future::ready(answer));
        }
        next.run(call)
    }
}

#[tokio::test]
async fn an_around_answers_in_the_handlers_place() {
    let server = server(builder!().middleware(Only::ability("shout", FromCache)));
    let cached = call(&server, None, "shout", json!({"input": "cached"})).await;
    // Wrapped as the handler's own answer would be.
    assert_eq!(
        cached["structuredContent"],
        json!({"result": "FROM THE CACHE"})
    );
    let ran = call(&server, None, "shout", json!({"input": "ran"})).await;
    assert_eq!(ran["structuredContent"], json!({"result": "RAN"}));
}

/// Never lets a call through.
struct Stall;

impl Middleware for Stall {
    fn around(&self, _call: Invocation, _next: Next) -> Running {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn the_calls_time_limit_bounds_its_middleware_too() {
    let server = server(
        builder!()
            .timeout(Some(Duration::from_millis(100)))
            .middleware(Only::ability("shout", Stall)),
    );
    let stalled = call(&server, None, "shout", json!({"input": "x"})).await;
    assert_eq!(code(&stalled), "TIMEOUT", "{stalled}");
}

/// Its test of which abilities it takes part in panics for one of them.
struct BrokenFilter;

impl Middleware for BrokenFilter {
    fn applies_to(&self, ability: &Ability) -> bool {
        assert_ne!(ability.name(), "refund", "a bug in a filter");
        true
    }
}

#[tokio::test]
async fn a_panicking_filter_fails_the_call_it_cannot_judge() {
    let server = server(builder!().middleware(BrokenFilter));
    let refused = call(&server, None, "refund", json!({"order": 1})).await;
    assert_eq!(code(&refused), "INTERNAL_ERROR", "{refused}");
    let ok = call(&server, None, "shout", json!({"input": "on"})).await;
    assert_eq!(ok["structuredContent"]["result"], "ON");
}

/// Counts the calls it checks (among the validated arguments), refusing none.
#[derive(Default)]
struct Counted(AtomicUsize);

impl Middleware for Counted {
    fn name(&self) -> &str {
        "counted"
    }
    fn check(&self, _call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn confirmation_is_a_link_the_chain_places_or_removes() {
    let forgotten = Arc::new(AtomicUsize::new(0));
    let forget = || {
        let forgotten = Arc::clone(&forgotten);
        Ability::builder("forget_all", abilities::Semantic::Delete)
            .description("Forget everything (destructive: it is confirmed).")
            .handler(move |_ctx, _args: Value| {
                let forgotten = Arc::clone(&forgotten);
                async move {
                    forgotten.fetch_add(1, Ordering::SeqCst);
                    Ok(json!({"forgotten": true}))
                }
            })
            .build()
            .unwrap()
    };
    let serve = |chain: Chain| {
        server(
            Server::builder()
                .registry(abilities::Registry::from_abilities([forget()]).unwrap())
                .surface(abilities::Surface::aql_single())
                .chain(chain),
        )
    };
    let ask = async |server: &Server| {
        let client = server.connect().await.unwrap();
        let answer = client
            .call("mcp_aql", json!({"operation": "forget_all", "params": {}}))
            .await
            .unwrap();
        client.close().await;
        let answer = serde_json::to_value(answer).unwrap();
        serde_json::from_str::<Value>(answer["content"][0]["text"].as_str().unwrap()).unwrap()
    };

    // By default it stands last: a middleware added runs first, then the user is asked.
    let counted = Arc::new(Counted::default());
    let chain = Chain::default().with(Arc::clone(&counted));
    assert_eq!(chain.names().last(), Some(&"confirmation"));
    assert_eq!(chain.names()[chain.names().len() - 2], "counted");
    let asked = ask(&serve(chain)).await;
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    assert_eq!(
        counted.0.load(Ordering::SeqCst),
        1,
        "checked before the gate"
    );

    // Moved before the middleware: the user is asked first, and the check waits for the retry.
    let counted = Arc::new(Counted::default());
    let chain = Chain::default()
        .with(Arc::clone(&counted))
        .move_before(Builtin::Confirmation, Builtin::Site);
    assert_eq!(
        chain.names(),
        [
            "idempotency",
            "traces",
            "metrics",
            "audit",
            "permission",
            "rate",
            "confirmation",
            "site",
            "counted"
        ]
    );
    let moved = serve(chain);
    // One client for both calls: a token is bound to the session that asked for it.
    let client = moved.connect().await.unwrap();
    let send = async |params: Value| {
        let answer = client
            .call(
                "mcp_aql",
                json!({"operation": "forget_all", "params": params}),
            )
            .await
            .unwrap();
        let answer = serde_json::to_value(answer).unwrap();
        serde_json::from_str::<Value>(answer["content"][0]["text"].as_str().unwrap()).unwrap()
    };
    let asked = send(json!({})).await;
    assert_eq!(asked["error"]["code"], "CONFIRMATION_REQUIRED", "{asked}");
    assert_eq!(counted.0.load(Ordering::SeqCst), 0, "the gate came first");
    assert_eq!(forgotten.load(Ordering::SeqCst), 0);
    // The confirmed retry passes the gate, then the links after it run, once.
    let token = asked["confirmation"]["token"].as_str().expect("a token");
    let retry = send(json!({"_confirmation": token})).await;
    client.close().await;
    assert_eq!(retry["data"], json!({"forgotten": true}), "{retry}");
    assert_eq!(
        counted.0.load(Ordering::SeqCst),
        1,
        "checked after the gate"
    );
    assert_eq!(forgotten.load(Ordering::SeqCst), 1);

    // Removed: nothing is confirmed, and the operation runs at once.
    let done = ask(&serve(Chain::default().without(Builtin::Confirmation))).await;
    assert_eq!(
        done,
        json!({"success": true, "data": {"forgotten": true}}),
        "{done}"
    );
    assert_eq!(forgotten.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn without_confirmation_no_token_lets_a_call_skip_its_rate() {
    let rated = Ability::builder("purge_cache", abilities::Semantic::Delete)
        .description("Purge the cache (destructive, once a minute).")
        .rate("1/min".parse().unwrap())
        .handler(|_ctx, _args: Value| async move { Ok(json!({"purged": true})) })
        .build()
        .unwrap();
    let server = server(
        Server::builder()
            .registry(abilities::Registry::from_abilities([rated]).unwrap())
            .surface(abilities::Surface::aql_single())
            .chain(Chain::default().without(Builtin::Confirmation)),
    );
    let client = server.connect().await.unwrap();
    let mut answers = Vec::new();
    for _ in 0..2 {
        let args = json!({"operation": "purge_cache", "params": {"_confirmation": "conf_made_up"}});
        let answer = serde_json::to_value(client.call("mcp_aql", args).await.unwrap()).unwrap();
        answers.push(
            serde_json::from_str::<Value>(answer["content"][0]["text"].as_str().unwrap()).unwrap(),
        );
    }
    client.close().await;
    assert_eq!(
        answers[0]["data"],
        json!({"purged": true}),
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[1]["error"]["code"], "RATE_LIMITED",
        "{}",
        answers[1]
    );
}
