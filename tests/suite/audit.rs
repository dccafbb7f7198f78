//! The audit trail: one event per call on every surface (native, standard, meta, MCP-AQL,
//! resources, prompts), the confirmation gate's tokens issued and redeemed, and parameters
//! marked sensitive kept out of every event, log line and error message, whether the call
//! succeeds, fails validation or fails in its handler.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Lines, confirmation_token, tool_error};
use abilities::{Ability, AbilityError, ErrorCode, Registry, Semantic, Server, Surface, ability};
use serde_json::{Value, json};

/// A buffer the audit trail (or a log subscriber) writes to, read by the test.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buf {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The audit events written so far, once there are at least `n` (the writer is a thread
    /// of its own).
    async fn events(&self, n: usize) -> Vec<Value> {
        for _ in 0..200 {
            let events: Vec<Value> = self
                .text()
                .lines()
                .map(|l| serde_json::from_str(l).expect("each line is JSON"))
                .collect();
            if events.len() >= n {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("fewer than {n} audit events: {}", self.text());
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buf {
    type Writer = Buf;
    fn make_writer(&'a self) -> Buf {
        self.clone()
    }
}

/// Count the posts.
#[ability(semantic = "READ")]
fn count_posts() -> u64 {
    3
}

/// Delete a post.
#[ability(semantic = "DELETE")]
fn delete_post(id: u64) -> u64 {
    id
}

/// Sign in.
#[ability(semantic = "EXECUTE")]
fn sign_in(user: String, #[param(sensitive)] password: String) -> Result<String, AbilityError> {
    if user == "mallory" {
        return Err(AbilityError::new(
            ErrorCode::ExecutionFailed,
            "the account is locked",
        ));
    }
    Ok(format!("welcome {user} ({} characters)", password.len()))
}

/// A key: a PIN or a phrase.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Key {
    /// Digits.
    Pin {
        /// The PIN.
        pin: u32,
    },
    /// Words.
    Phrase {
        /// The phrase.
        #[schemars(length(min = 40))]
        phrase: String,
    },
}

/// Unlock with a key (the whole input is sensitive).
#[ability(semantic = "EXECUTE", flatten)]
fn unlock(#[param(sensitive)] key: Key) -> bool {
    match key {
        Key::Pin { pin } => pin == 1234,
        Key::Phrase { phrase } => phrase.ends_with("sesame"),
    }
}

/// The readme.
#[ability(semantic = "READ", resource = "docs://readme")]
fn readme() -> String {
    "# Readme".into()
}

/// Greet someone.
#[ability(semantic = "READ", prompt)]
fn greet(name: String) -> String {
    format!("Hi {name}")
}

fn server(surface: Surface, audit: &Buf) -> Server {
    builder!()
        .registry(Registry::collect_in(module_path!()).expect("valid abilities"))
        .surface(surface)
        .audit_writer(audit.clone())
        .build()
        .expect("valid server")
}

fn digest(event: &Value) -> &str {
    event["args_sha256"].as_str().expect("a digest")
}

#[tokio::test]
async fn every_surface_records_one_event_per_call() {
    let audit = Buf::default();
    let mut native = Lines::initialized(&server(Surface::Native, &audit)).await;
    native.call(10, "count_posts", json!({})).await;
    native
        .request(11, "resources/read", json!({"uri": "docs://readme"}))
        .await;
    native
        .request(
            12,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    let mut standard = Lines::initialized(&server(Surface::Standard, &audit)).await;
    let refused = standard
        .request(
            20,
            "tools/call",
            json!({"name": "delete_post", "arguments": {"id": "x"}}),
        )
        .await;
    assert_eq!(refused["error"]["data"]["code"], "VALIDATION_INVALID_TYPE");
    let mut meta = Lines::initialized(&server(Surface::meta(), &audit)).await;
    meta.call(
        30,
        "mcp-adapter-execute-ability",
        json!({"ability_name": "count_posts", "parameters": {}}),
    )
    .await;
    let mut aql = Lines::initialized(&server(Surface::aql_single(), &audit)).await;
    aql.call(40, "mcp_aql", json!({"operation": "count_posts"}))
        .await;

    let events = audit.events(6).await;
    assert_eq!(events.len(), 6, "one event per call: {events:#?}");
    // Each server writes from a thread of its own: the order across servers is not kept.
    let mut events = events;
    events.sort_by_key(|e| e["request_id"].as_str().map(str::to_owned));
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["surface"].as_str().unwrap(),
                e["ability"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("native", "count_posts", "OK"),
            ("resource", "readme", "OK"),
            ("prompt", "greet", "OK"),
            ("standard", "delete_post", "VALIDATION_INVALID_TYPE"),
            ("meta", "count_posts", "OK"),
            ("aql", "count_posts", "OK"),
        ]
    );
    for event in &events {
        assert_eq!(event["event"], "call");
        assert_eq!(event["principal"], "local");
        assert!(event["request_id"].is_string(), "{event}");
        assert!(event["duration_ms"].as_f64().is_some_and(|d| d >= 0.0));
        let time = event["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z'), "{time}");
        assert_eq!(digest(event).len(), 64);
    }
    assert_eq!(events[0]["semantic"], "READ");
    assert_eq!(events[3]["semantic"], "DELETE");
    // The same arguments, the same digest: `{}` on native, meta and MCP-AQL alike.
    assert_eq!(digest(&events[0]), digest(&events[4]));
}

#[tokio::test]
async fn a_sensitive_parameter_appears_nowhere() {
    const SECRET: &str = "hunter2-correct-horse";
    let audit = Buf::default();
    let logs = Buf::default();
    // Everything this framework logs, at every level. (rmcp itself logs whole wire messages at
    // `debug`: the guide's Security chapter says to keep its target at `info`.)
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_env_filter("abilities=trace,abilities_runtime=trace,abilities_bridge=trace")
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    // A run-time ability with a constraint on the secret, so validation has something to
    // quote.
    let vault = Ability::builder("vault/open", Semantic::Execute)
        .description("Open a vault.")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "key": {"type": "string", "minLength": 40, "pattern": "^[a-f0-9]+$"}
            },
            "required": ["name", "key"]
        }))
        .sensitive(["key"])
        .handler(|_ctx, args: Value| async move {
            Err::<Value, _>(AbilityError::new(
                ErrorCode::ExecutionFailed,
                format!(
                    "vault {} is sealed",
                    args["name"].as_str().unwrap_or_default()
                ),
            ))
        })
        .build()
        .unwrap();
    let server = builder!()
        .registry(Registry::collect_in(module_path!()).unwrap())
        .ability(vault)
        .audit_writer(audit.clone())
        .build()
        .unwrap();
    let mut client = Lines::initialized(&server).await;

    // Success, a handler error, and validation failures of the macro's and the builder's.
    let ok = client
        .call(1, "sign_in", json!({"user": "ada", "password": SECRET}))
        .await;
    assert_eq!(ok["isError"], false, "{ok}");
    let failed = client
        .call(2, "sign_in", json!({"user": "mallory", "password": SECRET}))
        .await;
    assert_eq!(tool_error(&failed)["code"], "EXECUTION_FAILED");
    let invalid = client
        .call(3, "vault-open", json!({"name": "n", "key": SECRET}))
        .await;
    let error = tool_error(&invalid);
    assert_eq!(error["code"], "VALIDATION_INVALID_VALUE");
    let messages: Vec<&str> = error["details"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        [
            "parameter 'key' is invalid: it does not satisfy `minLength` (the value is sensitive and not shown)",
            "parameter 'key' is invalid: it does not satisfy `pattern` (the value is sensitive and not shown)",
        ]
    );
    // The other parameters' values are quoted as before.
    let other = client
        .call(
            4,
            "vault-open",
            json!({"name": "n", "key": "ab", "extra": 1}),
        )
        .await;
    assert_eq!(tool_error(&other)["code"], "VALIDATION_INVALID_VALUE");
    let sealed = client
        .call(
            5,
            "vault-open",
            json!({"name": "n", "key": "ab".repeat(20)}),
        )
        .await;
    assert_eq!(tool_error(&sealed)["message"], "vault n is sealed");

    let events = audit.events(5).await;
    let outcomes: Vec<&str> = events
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "OK",
            "EXECUTION_FAILED",
            "VALIDATION_INVALID_VALUE",
            "VALIDATION_INVALID_VALUE",
            "EXECUTION_FAILED"
        ]
    );
    // The digest leaves the secret out: two calls that differ only in it look alike, two
    // that differ in anything else do not.
    let again = client
        .call(6, "sign_in", json!({"user": "ada", "password": "another"}))
        .await;
    assert_eq!(again["isError"], false);
    let events = audit.events(6).await;
    assert_eq!(digest(&events[0]), digest(&events[5]));
    assert_ne!(digest(&events[0]), digest(&events[1]));

    // A sensitive input of union type: nothing of it is quoted, at any pointer.
    let union = client.call(7, "unlock", json!({"phrase": SECRET})).await;
    let error = tool_error(&union);
    assert_eq!(error["code"], "VALIDATION_INVALID_VALUE", "{error}");
    assert!(!union.to_string().contains(SECRET), "{union}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("(the value is sensitive and not shown)"),
        "{error}"
    );

    let trail = audit.text();
    let log = logs.text();
    assert!(!trail.contains(SECRET), "the audit trail holds the secret");
    assert!(!log.contains(SECRET), "a log line holds the secret: {log}");
    assert!(!invalid.to_string().contains(SECRET), "{invalid}");
    // The events went to `tracing` too, on their target.
    assert_eq!(log.matches("abilities::audit").count(), 7, "{log}");
}

#[tokio::test]
async fn confirmation_tokens_issued_and_redeemed_are_audited() {
    let audit = Buf::default();
    let mut client = Lines::initialized(&server(Surface::aql_single(), &audit)).await;
    let asked = client
        .call(
            1,
            "mcp_aql",
            json!({"operation": "delete_post", "params": {"id": 7}}),
        )
        .await;
    let envelope: Value =
        serde_json::from_str(asked["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["error"]["code"], "CONFIRMATION_REQUIRED");
    let token = confirmation_token(&asked);
    let done = client
        .call(
            2,
            "mcp_aql",
            json!({"operation": "delete_post", "params": {"id": 7, "_confirmation": token}}),
        )
        .await;
    let envelope: Value =
        serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["success"], true, "{envelope}");

    let events = audit.events(4).await;
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["event"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("confirmation.issued", "OK"),
            ("call", "CONFIRMATION_REQUIRED"),
            ("confirmation.redeemed", "OK"),
            ("call", "OK"),
        ]
    );
    assert_eq!(events[0]["operation"], "delete_post");
    assert_eq!(events[2]["principal"], "local");
}

#[tokio::test]
async fn an_audit_log_file_that_cannot_be_opened_fails_build() {
    let error = builder!()
        .registry(Registry::collect_in(module_path!()).unwrap())
        .audit_log("/nonexistent-dir/audit.jsonl")
        .build()
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .starts_with("the audit log `/nonexistent-dir/audit.jsonl` could not be opened: "),
        "{error}"
    );
}
