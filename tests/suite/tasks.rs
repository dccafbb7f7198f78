//! Background tasks over the wire (protocol 2026-07-28, the tasks extension): created,
//! polled to completion, cancelled, asked questions, kept from other callers, and kept
//! through a restart of the server process (a real one: this test binary serves in a child
//! process, which is killed with SIGKILL).

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{post, serve_http};
use abilities::{
    AbilityError, Caller, Context, Server, ability, auth::StaticTokens, config::TaskConfig,
    store::SqliteStore,
};
use serde_json::{Value, json};

/// Sleep `ms`, then say so; a task when the client can have one.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn nap(ctx: &Context, ms: u64) -> Value {
    ctx.progress(0.0, Some(1.0), Some("napping")).await;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    json!({"slept": ms})
}

/// Ask, as a task, whether to go on.
#[ability(semantic = "EXECUTE", task = "required")]
async fn ask_first(ctx: &Context) -> Result<Value, AbilityError> {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let answer = ctx.ask("go").elicit("Go on?", schema).await?;
    Ok(json!({"answer": answer.content}))
}

/// Asks, gives up waiting after 100 ms, then works on.
#[ability(semantic = "EXECUTE", task = "required")]
async fn impatient(ctx: &Context) -> Value {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let asked = ctx.ask("go").elicit("Go on?", schema);
    let answered = tokio::time::timeout(Duration::from_millis(100), asked)
        .await
        .is_ok();
    tokio::time::sleep(Duration::from_secs(60)).await;
    json!({"answered": answered})
}

/// Asks under the same key twice.
#[ability(semantic = "EXECUTE", task = "required")]
async fn asks_twice(ctx: &Context) -> Result<Value, AbilityError> {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let (first, second) = tokio::try_join!(
        ctx.ask("go").elicit("Go?", schema.clone()),
        ctx.ask("go").elicit("Really go?", schema),
    )?;
    Ok(json!({"first": first.content, "second": second.content}))
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn message(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"elicitation": {}, "extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Send a 2026-07-28 request with its routing headers (and a bearer token); the status
/// and the answer.
async fn send(addr: SocketAddr, token: Option<&str>, message: &Value) -> (u16, Value) {
    let params = &message["params"];
    let name = ["name", "uri", "taskId"]
        .iter()
        .find_map(|k| params[*k].as_str())
        .unwrap_or_default()
        .to_owned();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method.as_str()),
        ("mcp-name", name.as_str()),
    ];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer));
    }
    let response = post(addr, "/mcp", &headers, message.to_string()).await;
    (response.status, response.message())
}

async fn start(addr: SocketAddr, token: Option<&str>, name: &str, args: Value) -> Value {
    let call = message(
        1,
        "tools/call",
        json!({"name": name, "arguments": args}),
        true,
    );
    let (status, created) = send(addr, token, &call).await;
    assert_eq!(status, 200, "{created}");
    created["result"].clone()
}

async fn get(addr: SocketAddr, token: Option<&str>, id: &str) -> Value {
    let (_, task) = send(
        addr,
        token,
        &message(2, "tasks/get", json!({"taskId": id}), true),
    )
    .await;
    task
}

/// Poll until the task's status is `status` (or it ends), for at most 10 s.
async fn until(addr: SocketAddr, token: Option<&str>, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(addr, token, id).await["result"].clone();
        let now = task["status"].as_str().unwrap_or_default();
        if now == status || ["completed", "failed", "cancelled"].contains(&now) {
            return task;
        }
        assert!(Instant::now() < deadline, "still {now} after 10 s: {task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn server() -> Server {
    builder!().build().expect("valid")
}

#[tokio::test]
async fn a_task_is_polled_to_completion() {
    let addr = serve_http(&server()).await;
    let created = start(addr, None, "nap", json!({"ms": 300})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 500);
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = created["taskId"].as_str().expect("a task id");
    assert_eq!(id.len(), 32);

    // Found at once, and its progress is its status message.
    let working = get(addr, None, id).await["result"].clone();
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(working["statusMessage"], "0/1: napping");

    let done = until(addr, None, id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": {"slept": 300}})
    );
    assert_eq!(done["result"]["isError"], false);
    assert!(done.get("statusMessage").is_none(), "{done}");
}

#[tokio::test]
async fn a_task_is_cancelled_through_its_context() {
    let addr = serve_http(&server()).await;
    let created = start(addr, None, "nap", json!({"ms": 60_000})).await;
    let id = created["taskId"].as_str().expect("a task id");
    let (_, ack) = send(
        addr,
        None,
        &message(3, "tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let ended = until(addr, None, id, "cancelled").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
    // Cancelling what has ended changes nothing.
    let (_, again) = send(
        addr,
        None,
        &message(4, "tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(again["result"], json!({"resultType": "complete"}));
    assert_eq!(get(addr, None, id).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn a_task_asks_and_tasks_update_answers() {
    let addr = serve_http(&server()).await;
    let created = start(addr, None, "ask_first", json!({})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a task id");
    let waiting = until(addr, None, id, "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["go"]["params"]["message"], "Go on?",
        "{waiting}"
    );
    // A key it does not wait for, and an answer of the wrong shape, change nothing.
    let update = |id: u64, responses: Value, task: &str| {
        message(
            id,
            "tasks/update",
            json!({"taskId": task, "inputResponses": responses}),
            true,
        )
    };
    let (_, ack) = send(
        addr,
        None,
        &update(5, json!({"other": {"action": "accept"}, "go": 7}), id),
    )
    .await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    assert_eq!(
        get(addr, None, id).await["result"]["status"],
        "input_required"
    );
    let (_, _) = send(
        addr,
        None,
        &update(
            6,
            json!({"go": {"action": "accept", "content": {"go": true}}}),
            id,
        ),
    )
    .await;
    let done = until(addr, None, id, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": {"answer": {"go": true}}}),
        "{done}"
    );
}

#[tokio::test]
async fn without_the_extension_a_task_ability_runs_in_the_request_or_is_refused() {
    let addr = serve_http(&server()).await;
    let call = |name: &str, args: Value| {
        message(
            7,
            "tools/call",
            json!({"name": name, "arguments": args}),
            false,
        )
    };
    let (_, direct) = send(addr, None, &call("nap", json!({"ms": 1}))).await;
    assert_eq!(direct["result"]["resultType"], "complete", "{direct}");
    assert_eq!(
        direct["result"]["structuredContent"],
        json!({"result": {"slept": 1}})
    );

    let (status, refused) = send(addr, None, &call("ask_first", json!({}))).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {TASKS: {}}})
    );
    let (_, discover) = send(addr, None, &message(8, "server/discover", json!({}), false)).await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"],
        json!({TASKS: {}}),
        "{discover}"
    );
}

#[tokio::test]
async fn another_caller_learns_nothing_of_a_task() {
    let tokens = StaticTokens::new()
        .with_token("alice-token", Caller::new("alice", ["x"]))
        .with_token("bob-token", Caller::new("bob", ["x"]));
    let server = builder!().authenticator(tokens).build().expect("valid");
    let addr = serve_http(&server).await;
    let created = start(addr, Some("alice-token"), "nap", json!({"ms": 60_000})).await;
    let id = created["taskId"].as_str().expect("a task id");

    let foreign = get(addr, Some("bob-token"), id).await;
    let missing = get(addr, Some("bob-token"), "0123456789abcdef0123456789abcdef").await;
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(
        foreign["error"]["message"],
        format!("unknown task: {id}"),
        "the same answer as for a task that does not exist"
    );
    assert_eq!(missing["error"]["code"], -32602);
    for method in ["tasks/cancel", "tasks/update"] {
        let mut params = json!({"taskId": id});
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let (_, refused) = send(addr, Some("bob-token"), &message(9, method, params, true)).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
    }
    // Bob's cancel did not reach it.
    let own = get(addr, Some("alice-token"), id).await;
    assert_eq!(own["result"]["status"], "working", "{own}");
}

/// This test binary, serving the test's abilities on a task store file in a child process.
struct Served {
    child: Child,
    addr: SocketAddr,
}

const CHILD: &str = "ABILITIES_TASKS_CHILD_DB";

fn spawn_server(db: &std::path::Path) -> Served {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "tasks::a_task_outlives_its_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the child starts");
    let stdout = child.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the child prints its address")
            .expect("a line");
        // The harness may print its own words before ours on the same line.
        if let Some((_, addr)) = line.split_once("LISTENING ") {
            break addr.trim().parse().expect("an address");
        }
    };
    Served { child, addr }
}

#[test]
fn a_task_outlives_its_process() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if let Some(db) = std::env::var_os(CHILD) {
        // The child: serve until killed.
        runtime.block_on(async {
            let store = SqliteStore::open(&db).expect("the task store");
            let server = builder!().store(store).build().expect("valid");
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a port");
            println!("LISTENING {}", listener.local_addr().expect("an address"));
            abilities::http::serve_router(listener, server.router("/mcp"))
                .await
                .expect("serves");
        });
        return;
    }
    let dir = std::env::temp_dir().join(format!("abilities-tasks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let db = dir.join("tasks.db");
    runtime.block_on(async {
        let mut first = spawn_server(&db);
        let done = start(first.addr, None, "nap", json!({"ms": 10})).await;
        let done = done["taskId"].as_str().expect("an id").to_owned();
        assert_eq!(
            until(first.addr, None, &done, "completed").await["status"],
            "completed"
        );
        let running = start(first.addr, None, "nap", json!({"ms": 60_000})).await;
        let running = running["taskId"].as_str().expect("an id").to_owned();
        assert_eq!(
            get(first.addr, None, &running).await["result"]["status"],
            "working"
        );
        first.child.kill().expect("SIGKILL");
        let _ = first.child.wait();

        let mut second = spawn_server(&db);
        let kept = get(second.addr, None, &done).await["result"].clone();
        assert_eq!(kept["status"], "completed", "{kept}");
        assert_eq!(
            kept["result"]["structuredContent"],
            json!({"result": {"slept": 10}})
        );
        let interrupted = get(second.addr, None, &running).await["result"].clone();
        assert_eq!(interrupted["status"], "failed", "{interrupted}");
        assert_eq!(
            interrupted["statusMessage"],
            "the server stopped while this task was running"
        );
        assert_eq!(interrupted["error"]["code"], -32603);
        second.child.kill().expect("SIGKILL");
        let _ = second.child.wait();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_resource_cannot_be_a_task() {
    let built = abilities::Ability::builder("docs", abilities::Semantic::Read)
        .description("Docs.")
        .resource("docs://all", None)
        .task(abilities::TaskSupport::Optional)
        .handler(|_ctx, _args: Value| async move { Ok(json!("docs")) })
        .build();
    let error = built.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        error.contains("resources and prompts answer in the request"),
        "{error}"
    );
}

#[tokio::test]
async fn a_question_the_handler_stopped_waiting_for_is_no_longer_asked() {
    let addr = serve_http(&server()).await;
    let created = start(addr, None, "impatient", json!({})).await;
    let id = created["taskId"].as_str().expect("a task id");
    let asked = until(addr, None, id, "input_required").await;
    assert_eq!(asked["status"], "input_required", "{asked}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(addr, None, id).await["result"].clone();
        if task["status"] == "working" {
            assert!(task.get("inputRequests").is_none(), "{task}");
            break;
        }
        assert!(Instant::now() < deadline, "still asking: {task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = send(
        addr,
        None,
        &message(9, "tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
}

#[tokio::test]
async fn a_key_names_one_question_for_a_tasks_lifetime() {
    let addr = serve_http(&server()).await;
    let created = start(addr, None, "asks_twice", json!({})).await;
    let id = created["taskId"].as_str().expect("a task id");
    let ended = until(addr, None, id, "failed").await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("key `go` before")),
        "{ended}"
    );
}

#[tokio::test]
async fn a_caller_may_run_only_so_many_tasks() {
    // A caller the server can tell apart: a principal, by its bearer token.
    let server = builder!()
        .authenticator(StaticTokens::new().with_token("ada-secret", Caller::trusted("ada")))
        .tasks(TaskConfig::default().max_per_caller(1))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    let ada = Some("ada-secret");
    let first = start(addr, ada, "nap", json!({"ms": 60_000})).await;
    assert_eq!(first["resultType"], "task", "{first}");
    let call = message(
        1,
        "tools/call",
        json!({"name": "nap", "arguments": {"ms": 10}}),
        true,
    );
    let (_, refused) = send(addr, ada, &call).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(
        refused["error"]["data"],
        json!({"code": "TOO_MANY_TASKS", "limit": 1})
    );
    let id = first["taskId"].as_str().expect("an id");
    let _ = send(
        addr,
        ada,
        &message(2, "tasks/cancel", json!({"taskId": id}), true),
    )
    .await;
    assert_eq!(
        until(addr, ada, id, "cancelled").await["status"],
        "cancelled"
    );
    let again = start(addr, ada, "nap", json!({"ms": 60_000})).await;
    assert_eq!(
        again["resultType"], "task",
        "room again once it ended: {again}"
    );
}

/// The `_meta` of a 2026-07-28 request from a client with the tasks extension.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    })
}

#[tokio::test]
async fn a_listen_stream_hears_of_the_tasks_it_follows() {
    let server = server();
    let mut lines = support::Lines::start(&server);
    let discovered = lines
        .request(0, "server/discover", json!({"_meta": meta()}))
        .await;
    assert!(
        discovered["result"]["supportedVersions"].is_array(),
        "{discovered}"
    );
    let created = lines
        .request(
            1,
            "tools/call",
            json!({"name": "nap", "arguments": {"ms": 300}, "_meta": meta()}),
        )
        .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let other = lines
        .request(
            2,
            "tools/call",
            json!({"name": "nap", "arguments": {"ms": 10}, "_meta": meta()}),
        )
        .await;
    let other = other["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();

    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {
                "notifications": {"taskIds": [id, "0123456789abcdef0123456789abcdef", id]},
                "_meta": meta()
            }})
            .to_string(),
        )
        .await;
    let ack = lines.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let mut statuses = Vec::new();
    let mut last = Value::Null;
    loop {
        let message = lines.next().await;
        assert_eq!(message["method"], "notifications/tasks", "{message}");
        // Named twice, followed once: no change is told twice.
        assert_ne!(message, last, "a notification repeated");
        last = message.clone();
        let params = &message["params"];
        assert_eq!(
            params["taskId"],
            id.as_str(),
            "only the task followed: {message}"
        );
        assert_eq!(
            params["_meta"]["io.modelcontextprotocol/subscriptionId"], 3,
            "{message}"
        );
        assert!(params.get("resultType").is_none(), "{message}");
        let status = params["status"].as_str().unwrap_or_default().to_owned();
        statuses.push(status.clone());
        if status == "completed" {
            assert_eq!(
                params["result"]["structuredContent"],
                json!({"result": {"slept": 300}})
            );
            break;
        }
    }
    assert_eq!(
        statuses.first().map(String::as_str),
        Some("working"),
        "{statuses:?}"
    );
    assert_ne!(id, other);
}

#[tokio::test]
async fn malformed_params_of_task_methods_are_invalid_params_not_unknown_methods() {
    let addr = serve_http(&server()).await;
    let cases = [
        ("tasks/get", json!({"taskId": 12345})),
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": null})),
        ("tasks/cancel", json!({"taskId": ["a", "b"]})),
        ("tasks/update", json!({"taskId": "t", "inputResponses": 5})),
        ("subscriptions/listen", json!({"notifications": 5})),
    ];
    for (method, params) in cases {
        let (status, answer) = send(addr, None, &message(7, method, params.clone(), true)).await;
        assert_eq!(status, 200, "{method} {params}: {answer}");
        assert_eq!(answer["id"], 7, "{answer}");
        assert_eq!(
            answer["error"]["code"], -32602,
            "{method} {params}: {answer}"
        );
        let text = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            text.starts_with(&format!("Invalid params for {method}: ")),
            "{text}"
        );
    }
}

#[tokio::test]
async fn the_task_limit_holds_under_a_race_and_anonymous_callers_share_only_the_servers() {
    let server = builder!()
        .authenticator(
            StaticTokens::new()
                .with_token("ada-secret", Caller::trusted("ada"))
                .allow_anonymous(Caller::anonymous()),
        )
        .tasks(TaskConfig::default().max_per_caller(5).max_running(12))
        .build()
        .expect("valid");
    let addr = serve_http(&server).await;
    // 40 task calls at once from one caller: exactly 5 become tasks.
    let racing: Vec<_> = (0..40)
        .map(|i| {
            tokio::spawn(async move {
                let call = message(
                    i,
                    "tools/call",
                    json!({"name": "nap", "arguments": {"ms": 60_000}}),
                    true,
                );
                send(addr, Some("ada-secret"), &call).await.1
            })
        })
        .collect();
    let mut created = 0;
    for answer in racing {
        let answer = answer.await.expect("the request ran");
        if answer["result"]["resultType"] == "task" {
            created += 1;
        } else {
            assert_eq!(
                answer["error"]["data"]["code"], "TOO_MANY_TASKS",
                "{answer}"
            );
        }
    }
    assert_eq!(created, 5, "tasks created against a limit of 5");
    // Anonymous callers cannot be told apart: none uses up a per-caller budget for
    // another, and together they stop at the server's limit (12, 5 of them Ada's).
    let mut anonymous = 0;
    for i in 0..10 {
        let call = message(
            100 + i,
            "tools/call",
            json!({"name": "nap", "arguments": {"ms": 60_000}}),
            true,
        );
        let (_, answer) = send(addr, None, &call).await;
        if answer["result"]["resultType"] == "task" {
            anonymous += 1;
        } else {
            assert_eq!(
                answer["error"]["data"],
                json!({"code": "TOO_MANY_TASKS", "limit": 12}),
                "{answer}"
            );
            let text = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(text.contains("on this server"), "{text}");
        }
    }
    assert_eq!(anonymous, 7, "anonymous tasks up to the server's limit");
}
