//! Multi-round input: one handler that asks the user twice, served on protocol 2026-07-28
//! (the call answers `input_required` with a sealed `requestState`, and the client retries
//! with its answers) and on 2025-11-25 (the server asks the client directly), same code.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::{post, serve_http};
use abilities::protocol::rmcp::model::{
    CallToolRequestParams, ClientConfig, ElicitRequestParams, ElicitResult, ErrorData,
};
use abilities::protocol::rmcp::service::RequestContext;
use abilities::protocol::rmcp::{ClientHandler, RoleClient, ServiceExt};
use abilities::{AbilityError, Context, Server, ability, config::LedgerConfig, prompt::Prompt};
use serde_json::{Value, json};

fn one(property: &str) -> Value {
    json!({"type": "object", "properties": {property: {"type": "string"}}, "required": [property]})
}

fn entered(answer: &abilities::client::Elicitation, property: &str) -> String {
    answer
        .content
        .as_ref()
        .and_then(|c| c[property].as_str())
        .unwrap_or("?")
        .to_owned()
}

/// Ask for a name, then for a color.
#[ability(semantic = "EXECUTE")]
async fn two_questions(ctx: &Context, greeting: String) -> Result<Value, AbilityError> {
    let name = ctx.elicit("Your name?", one("name")).await?;
    let color = ctx.elicit("Your favorite color?", one("color")).await?;
    Ok(
        json!({"text": format!("{greeting}, {}: {}", entered(&name, "name"), entered(&color, "color"))}),
    )
}

/// Ask the model, which this test's clients never declare.
#[ability(semantic = "EXECUTE")]
async fn needs_sampling(ctx: &Context) -> Result<Value, AbilityError> {
    let answer = ctx.sample_text("hello?", 10).await?;
    Ok(json!({"answer": answer}))
}

/// A prompt that asks for its topic first.
#[ability(semantic = "READ", prompt)]
async fn asking_prompt(ctx: &Context) -> Result<Prompt, AbilityError> {
    let topic = ctx
        .ask("topic")
        .elicit("Which topic?", one("topic"))
        .await?;
    Ok(Prompt::new().user(format!("Write about {}", entered(&topic, "topic"))))
}

/// Counts its runs, and asks about the count: the question changes from run to run (it
/// confirms itself, so the server's gate stays out of its way).
#[ability(semantic = "DELETE", confirm = false)]
async fn moving_question(
    ctx: &Context,
    runs: abilities::State<std::sync::atomic::AtomicUsize>,
) -> Result<Value, AbilityError> {
    let run = runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    let answer = ctx
        .ask("confirm")
        .elicit(&format!("Delete {run} posts?"), one("ok"))
        .await?;
    Ok(json!({"deleted": run, "answer": answer.content}))
}

const KEY: &[u8] = b"a shared key of at least 32 bytes!!";

fn server(key: &[u8], lifetime: Duration) -> Server {
    builder!()
        .state(std::sync::atomic::AtomicUsize::new(0))
        .ledger(
            LedgerConfig::default()
                .request_state_key(key)
                .request_state_ttl(lifetime),
        )
        .build()
        .expect("valid")
}

/// A 2026-07-28 request: `_meta` names the version and the client's capabilities.
fn request(id: u64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

async fn send(addr: SocketAddr, message: &Value) -> (u16, Value) {
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let name = message["params"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method.as_str()),
        ("mcp-name", name.as_str()),
    ];
    let response = post(addr, "/mcp", &headers, message.to_string()).await;
    (response.status, response.message())
}

fn call(id: u64, extra: Value) -> Value {
    let mut params = json!({"name": "two_questions", "arguments": {"greeting": "Hi"}});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    request(id, "tools/call", params, json!({"elicitation": {}}))
}

fn accept(property: &str, value: &str) -> Value {
    json!({"action": "accept", "content": {property: value}})
}

#[tokio::test]
async fn a_handler_that_asks_twice_takes_three_rounds_on_2026_07_28() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;

    let (status, first) = send(addr, &call(1, json!({}))).await;
    assert_eq!(status, 200, "{first}");
    let first = &first["result"];
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(
        first["inputRequests"],
        json!({"elicitation-0": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Your name?", "requestedSchema": one("name")
        }}})
    );
    let state = first["requestState"].as_str().expect("a request state");

    let (_, second) = send(
        addr,
        &call(
            2,
            json!({"inputResponses": {"elicitation-0": accept("name", "Ada")}, "requestState": state}),
        ),
    )
    .await;
    let second = &second["result"];
    assert_eq!(second["resultType"], "input_required", "{second}");
    let asked: Vec<&String> = second["inputRequests"]
        .as_object()
        .expect("questions")
        .keys()
        .collect();
    assert_eq!(asked, ["elicitation-1"]);
    assert_eq!(
        second["inputRequests"]["elicitation-1"]["params"]["message"],
        "Your favorite color?"
    );
    let state_2 = second["requestState"].as_str().expect("a new state");
    assert_ne!(state_2, state);

    // The first answer travels in the state: the retry brings only the second.
    let (_, done) = send(
        addr,
        &call(
            3,
            json!({"inputResponses": {"elicitation-1": accept("color", "green")}, "requestState": state_2}),
        ),
    )
    .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": {"text": "Hi, Ada: green"}})
    );
}

/// Answers the two questions, over a session of protocol 2025-11-25.
#[derive(Clone)]
struct Answering;

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        support::client_config("answering", json!({"elicitation": {}}))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        let answer = match asked["message"].as_str() {
            Some("Your name?") => accept("name", "Grace"),
            _ => accept("color", "blue"),
        };
        Ok(serde_json::from_value(answer).expect("a result"))
    }
}

#[tokio::test]
async fn the_same_handler_asks_the_client_directly_on_2025_11_25() {
    let server = server(KEY, Duration::from_secs(600));
    let client = Answering
        .serve(support::session(&server))
        .await
        .expect("connects");
    let Value::Object(args) = json!({"greeting": "Hello"}) else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("two_questions").with_arguments(args))
        .await
        .expect("answers");
    let result = serde_json::to_value(result).expect("serializes");
    assert_eq!(
        result["structuredContent"],
        json!({"result": {"text": "Hello, Grace: blue"}})
    );
}

#[tokio::test]
async fn a_tampered_expired_or_foreign_state_is_refused() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let (_, first) = send(addr, &call(1, json!({}))).await;
    let state = first["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let answer = json!({"elicitation-0": accept("name", "Ada")});

    // One answer whatever is wrong with the state: nothing to learn from the refusal.
    let refused = |response: &Value| {
        assert_eq!(response["error"]["code"], -32602, "{response}");
        assert_eq!(
            response["error"]["message"], "requestState is not valid for this request",
            "{response}"
        );
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    // One character changed in the signed part.
    let mut tampered = state.clone().into_bytes();
    let at = tampered.len() / 2;
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let (status, response) = send(
        addr,
        &call(
            2,
            json!({"inputResponses": answer, "requestState": tampered}),
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(refused(&response).contains("requestState"), "{response}");

    // The same state with other arguments: bound to the request it belongs to.
    let mut other = call(3, json!({"inputResponses": answer, "requestState": state}));
    other["params"]["arguments"]["greeting"] = json!("Bye");
    let (_, response) = send(addr, &other).await;
    refused(&response);

    // Another server's key.
    let elsewhere = serve_http(&server(
        b"another key, also 32 bytes or more",
        Duration::from_secs(600),
    ))
    .await;
    let (_, response) = send(
        elsewhere,
        &call(4, json!({"inputResponses": answer, "requestState": state})),
    )
    .await;
    refused(&response);

    // A replica with the same key resumes the call.
    let replica = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let (_, response) = send(
        replica,
        &call(5, json!({"inputResponses": answer, "requestState": state})),
    )
    .await;
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );

    // Past its lifetime.
    let short = serve_http(&server(KEY, Duration::from_millis(50))).await;
    let (_, first) = send(short, &call(6, json!({}))).await;
    let state = first["result"]["requestState"].as_str().expect("a state");
    tokio::time::sleep(Duration::from_millis(120)).await;
    let (_, response) = send(
        short,
        &call(7, json!({"inputResponses": answer, "requestState": state})),
    )
    .await;
    refused(&response);
}

#[tokio::test]
async fn a_short_key_fails_build() {
    let error = builder!()
        .ledger(LedgerConfig::default().request_state_key(b"short".as_slice()))
        .build()
        .err()
        .map(|e| e.to_string());
    assert!(
        error.as_deref().is_some_and(|e| e.contains("too short")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_capability_the_client_did_not_declare_is_minus_32021() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let message = request(
        1,
        "tools/call",
        json!({"name": "needs_sampling", "arguments": {}}),
        json!({}),
    );
    let (status, response) = send(addr, &message).await;
    assert_eq!(status, 400, "{response}");
    assert_eq!(response["error"]["code"], -32021, "{response}");
    assert_eq!(
        response["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    // Sampling is deprecated on this version (SEP-2577), and the answer says so.
    let said = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("sampling is deprecated in protocol 2026-07-28 (SEP-2577)")
            && said.contains("call a model provider from the server instead"),
        "{said}"
    );
}

#[tokio::test]
async fn prompts_ask_in_rounds_too() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let get = |id: u64, extra: Value| {
        let mut params = json!({"name": "asking_prompt"});
        if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
            params.extend(extra);
        }
        request(id, "prompts/get", params, json!({"elicitation": {}}))
    };
    let (_, first) = send(addr, &get(1, json!({}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(first["result"]["inputRequests"]["topic"].is_object());
    let state = first["result"]["requestState"].as_str().expect("a state");
    let (_, done) = send(
        addr,
        &get(
            2,
            json!({"inputResponses": {"topic": accept("topic", "tides")}, "requestState": state}),
        ),
    )
    .await;
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], "Write about tides",
        "{done}"
    );
}

#[tokio::test]
async fn an_answer_of_the_wrong_shape_is_asked_again() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let (_, response) = send(
        addr,
        &call(1, json!({"inputResponses": {"elicitation-0": 12345}})),
    )
    .await;
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    assert!(response["result"]["inputRequests"]["elicitation-0"].is_object());
}

#[tokio::test]
async fn an_answer_is_never_handed_to_a_question_that_changed() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    let call = |id: u64, extra: Value| {
        let mut params = json!({"name": "moving_question", "arguments": {}});
        if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
            params.extend(extra);
        }
        request(id, "tools/call", params, json!({"elicitation": {}}))
    };
    let (_, first) = send(addr, &call(1, json!({}))).await;
    assert_eq!(
        first["result"]["inputRequests"]["confirm"]["params"]["message"],
        "Delete 1 posts?"
    );
    let state = first["result"]["requestState"].as_str().expect("a state");
    // The answer was to "Delete 1 posts?"; the run it reaches asks "Delete 2 posts?".
    let (_, second) = send(
        addr,
        &call(
            2,
            json!({"inputResponses": {"confirm": accept("ok", "yes")}, "requestState": state}),
        ),
    )
    .await;
    assert_eq!(second["result"]["resultType"], "input_required", "{second}");
    assert_eq!(
        second["result"]["inputRequests"]["confirm"]["params"]["message"],
        "Delete 2 posts?"
    );
}

#[tokio::test]
async fn a_state_carries_only_the_answers_taken_and_has_a_size_cap() {
    let addr = serve_http(&server(KEY, Duration::from_secs(600))).await;
    // 2,000 answers to nothing asked beside one to the first question, sent up front: the
    // handler takes that one and asks its second; only what it took is sealed.
    let junk: serde_json::Map<String, Value> = (0..2000)
        .map(|i| {
            (
                format!("junk-{i}"),
                accept("name", "x".repeat(100).as_str()),
            )
        })
        .chain([("elicitation-0".to_owned(), accept("name", "Ada"))])
        .collect();
    let (_, first) = send(addr, &call(1, json!({"inputResponses": junk}))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(
        first["result"]["inputRequests"]["elicitation-1"]["params"]["message"],
        "Your favorite color?",
        "{first}"
    );
    let state = first["result"]["requestState"].as_str().expect("a state");
    assert!(state.len() < 2048, "a state of {} bytes", state.len());

    // With the state: junk sent beside the answer does not travel on either.
    let mut answers = serde_json::Map::new();
    for i in 0..2000 {
        answers.insert(
            format!("junk-{i}"),
            accept("name", "y".repeat(100).as_str()),
        );
    }
    let (_, second) = send(
        addr,
        &call(2, json!({"inputResponses": answers, "requestState": state})),
    )
    .await;
    assert_eq!(
        second["result"]["inputRequests"]["elicitation-1"]["params"]["message"],
        "Your favorite color?",
        "{second}"
    );
    let state_2 = second["result"]["requestState"].as_str().expect("a state");
    assert!(state_2.len() < 2048, "a state of {} bytes", state_2.len());
    // The answer it took is still there: the last round completes.
    let (_, third) = send(
        addr,
        &call(
            3,
            json!({"inputResponses": {"elicitation-1": accept("color", "green")}, "requestState": state_2}),
        ),
    )
    .await;
    assert_eq!(
        third["result"]["structuredContent"],
        json!({"result": {"text": "Hi, Ada: green"}}),
        "{third}"
    );

    // An answer too large to carry on is refused, not sealed.
    let huge = accept("name", "z".repeat(300 * 1024).as_str());
    let (_, refused) = send(
        addr,
        &call(4, json!({"inputResponses": {"elicitation-0": huge}})),
    )
    .await;
    assert_eq!(
        refused["error"]["code"],
        -32602,
        "{}",
        refused.to_string().chars().take(300).collect::<String>()
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than the 262144"), "{message}");
}
