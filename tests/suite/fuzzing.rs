//! The entry points a hostile client reaches, as one harness for the property tests
//! (`tests/suite/properties.rs`) and the `cargo fuzz` targets (`fuzz/`): the stdio framing and the
//! JSON-RPC message checks, tool arguments through the normalizer, validation and the lenient
//! coercion, MCP-AQL requests and collection queries, URI templates, and sealed
//! `requestState`s and confirmation tokens. Each entry point asserts what must hold whatever
//! arrives: an answer for every request, of the expected shape, and a server that goes on
//! serving. A panic anywhere is the failure.

#![allow(dead_code, reason = "each user calls part of the harness")]
#![allow(
    unreachable_pub,
    missing_docs,
    reason = "a harness shared by the property tests and the fuzz targets"
)]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "the harness fails loudly: that is what a fuzzer and a property test look for"
)]

use std::time::Duration;

use abilities::{Registry, Server, Surface, ability, config::LedgerConfig, testing::TestClient};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A nested value.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Author {
    /// The name.
    #[schemars(length(min = 1, max = 40))]
    pub name: String,
    /// Contact address.
    pub email: Option<String>,
}

/// Kinds of post.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A post.
    Post,
    /// A page.
    Page,
}

/// One row a listing returns.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Row {
    /// Its id.
    pub id: u32,
    /// Its title.
    pub title: String,
    /// Its score.
    pub score: f64,
    /// Its tags.
    pub tags: Vec<String>,
}

/// Create a post (named parameters of many shapes).
#[ability(semantic = "CREATE")]
fn harness_create(
    title: String,
    #[param(default = 1)] count: u8,
    tags: Vec<String>,
    #[param(default = false)] draft: bool,
    author: Option<Author>,
    #[param(sensitive)] secret: Option<String>,
) -> Value {
    json!({"title": title, "count": count, "tags": tags.len(), "draft": draft,
           "author": author.is_some(), "secret": secret.is_some()})
}

/// Count posts of one kind (one flattened value).
#[ability(semantic = "READ", flatten)]
fn harness_count(kind: Kind) -> u64 {
    match kind {
        Kind::Post => 3,
        Kind::Page => 1,
    }
}

/// List rows (a collection MCP-AQL can filter, sort, page and aggregate).
#[ability(semantic = "READ")]
fn harness_list() -> Vec<Row> {
    (0..12)
        .map(|id| Row {
            id,
            title: format!("row {id}"),
            score: f64::from(id) / 3.0,
            tags: (0..id % 3).map(|t| format!("t{t}")).collect(),
        })
        .collect()
}

/// Delete a row (needs confirmation, on every surface).
#[ability(semantic = "DELETE")]
fn harness_delete(id: u32) -> u32 {
    id
}

/// What every entry point runs against: one runtime, one server per surface, connected once.
pub struct Harness {
    rt: tokio::runtime::Runtime,
    native: Server,
    native_client: TestClient,
    standard_client: TestClient,
    aql_client: TestClient,
}

/// Whether `tool` refusing arbitrary arguments with `code` is what it may do: a validation
/// code, or the confirmation `harness_delete` asks for.
fn refused_as_expected(tool: &str, code: Option<&str>) -> bool {
    code.is_some_and(|code| {
        code.starts_with("VALIDATION_")
            || (tool == "harness_delete" && code == "CONFIRMATION_REQUIRED")
    })
}

const TOOLS: [&str; 4] = [
    "harness_create",
    "harness_count",
    "harness_list",
    "harness_delete",
];

impl Harness {
    pub fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let build = |surface: Surface| {
            Server::builder()
                // This module's abilities only: the suite that includes it has many more.
                .registry(Registry::collect_in(module_path!()).expect("the harness abilities"))
                .surface(surface)
                .ledger(
                    LedgerConfig::default()
                        .request_state_key(b"fuzzing-key-fuzzing-key-fuzzing!".to_vec()),
                )
                .build()
                .expect("a valid server")
        };
        let native = build(Surface::Native);
        let (native_client, standard_client, aql_client) = rt.block_on(async {
            (
                native.connect().await.expect("connects"),
                build(Surface::Standard).connect().await.expect("connects"),
                build(Surface::aql_single())
                    .connect()
                    .await
                    .expect("connects"),
            )
        });
        Self {
            rt,
            native,
            native_client,
            standard_client,
            aql_client,
        }
    }

    /// Serve `bytes` as stdio input, then one 2026-07-28 `tools/list`: it is answered (the server kept
    /// serving), and every line written is one JSON-RPC message or a batch of them.
    pub fn stdio(&self, bytes: &[u8]) -> Vec<Value> {
        let mut input = bytes.to_vec();
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":\"last-ping\",\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n");
        let server = self.native.clone();
        let output = self.rt.block_on(async move {
            let (out_write, mut out_read) = tokio::io::duplex(1 << 22);
            let serving = tokio::spawn(async move {
                let _ = server
                    .serve_stream(std::io::Cursor::new(input), out_write)
                    .await;
            });
            let mut output = Vec::new();
            let read = tokio::time::timeout(
                Duration::from_secs(20),
                tokio::io::AsyncReadExt::read_to_end(&mut out_read, &mut output),
            )
            .await;
            assert!(read.is_ok(), "the server never closed its output");
            serving.await.expect("the serving task ended");
            output
        });
        let text = String::from_utf8(output).expect("the output is UTF-8");
        let mut pinged = false;
        let mut answers = Vec::new();
        for line in text.lines() {
            let message: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a line that is not JSON ({e}): {line}"));
            let messages = match &message {
                Value::Array(all) => all.clone(),
                one => vec![one.clone()],
            };
            for message in messages {
                assert_eq!(message["jsonrpc"], "2.0", "{message}");
                pinged |= message["id"] == "last-ping" && message["result"]["tools"].is_array();
                answers.push(message);
            }
        }
        // Input that starts a session of its own (an `initialize`, which may fail and end it)
        // is exempt: only a server still in the stateless lifecycle must answer.
        if !initializes(bytes) {
            assert!(pinged, "the ping after the input was not answered: {text}");
        }
        answers
    }

    /// `args` as the arguments of every tool, natively and in standard mode: a result every
    /// time, an `isError` one with a framework code when refused (standard: a JSON-RPC error
    /// with the code in `data`), never an internal error. The code is a validation code, or
    /// (for the ability that must be confirmed, once its arguments are valid)
    /// `CONFIRMATION_REQUIRED`.
    pub fn tool_arguments(&self, args: &Value) {
        let Value::Object(map) = args else {
            return;
        };
        self.rt.block_on(async {
            for tool in TOOLS {
                let native = self
                    .native_client
                    .call(tool, Value::Object(map.clone()))
                    .await
                    .unwrap_or_else(|e| panic!("{tool} {args}: no answer: {e}"));
                let native = serde_json::to_value(&native).unwrap();
                if native["isError"] == true {
                    let text = native["content"][0]["text"].as_str().unwrap();
                    let error: Value = serde_json::from_str(text).unwrap();
                    let code = error["code"].as_str().unwrap();
                    assert!(
                        refused_as_expected(tool, Some(code)),
                        "{tool} {args}: refused with {error}"
                    );
                } else {
                    assert!(native["structuredContent"].is_object(), "{native}");
                }
                match self
                    .standard_client
                    .call(tool, Value::Object(map.clone()))
                    .await
                {
                    Ok(result) => assert_ne!(result.is_error, Some(true), "{tool} {args}"),
                    Err(abilities::protocol::rmcp::ServiceError::McpError(error)) => {
                        let code = error.data.as_ref().and_then(|d| d["code"].as_str());
                        assert!(
                            refused_as_expected(tool, code),
                            "{tool} {args}: standard mode refused with {error:?}"
                        );
                    }
                    Err(other) => panic!("{tool} {args}: standard mode failed: {other}"),
                }
            }
        });
    }

    /// `request` as the arguments of `mcp_aql`: always an envelope, `success` true with
    /// `data` or false with an upper-snake `error.code`, never an internal error.
    pub fn aql(&self, request: &Value) {
        self.rt.block_on(async {
            let result = self
                .aql_client
                .call("mcp_aql", request.clone())
                .await
                .unwrap_or_else(|e| panic!("{request}: no answer: {e}"));
            let text = result.content[0]
                .as_text()
                .map(|t| t.text.clone())
                .unwrap_or_else(|| panic!("{request}: no text block"));
            let envelope: Value = serde_json::from_str(&text).expect("the envelope is JSON");
            match envelope["success"].as_bool() {
                Some(true) => {}
                Some(false) => {
                    let code = envelope["error"]["code"].as_str().expect("an error code");
                    assert!(
                        code != "INTERNAL_ERROR"
                            && code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                        "{request}: {envelope}"
                    );
                }
                None => panic!("{request}: not an envelope: {envelope}"),
            }
        });
    }

    /// `text` as a sealed `requestState` (2026-07-28 multi-round input) and as an MCP-AQL
    /// confirmation token: refused with the specific error, never taken.
    pub fn sealed(&self, text: &str) {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "harness_count", "arguments": {"input": "post"}, "requestState": text,
            "inputResponses": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let answers = self.stdio(call.to_string().as_bytes());
        let answer = answers
            .iter()
            .find(|a| a["id"] == 7)
            .unwrap_or_else(|| panic!("no answer to the call: {answers:?}"));
        assert!(
            answer["error"]["code"] == -32602,
            "a forged requestState was taken: {answer}"
        );
        self.rt.block_on(async {
            let result = self
                .aql_client
                .call(
                    "mcp_aql",
                    json!({"operation": "harness_delete", "params": {"id": 1, "_confirmation": text}}),
                )
                .await
                .expect("an answer");
            let text_block = result.content[0].as_text().unwrap().text.clone();
            let envelope: Value = serde_json::from_str(&text_block).unwrap();
            assert_eq!(envelope["success"], false, "a forged token was taken: {envelope}");
            let code = envelope["error"]["code"].as_str().unwrap();
            assert!(
                matches!(code, "TOKEN_INVALID" | "TOKEN_EXPIRED" | "VALIDATION_INVALID_TYPE"),
                "{envelope}"
            );
        });
    }
}

/// Whether any line of `bytes` (or a batch member) is an `initialize` request.
fn initializes(bytes: &[u8]) -> bool {
    let is_initialize = |v: &Value| v.get("method").and_then(Value::as_str) == Some("initialize");
    bytes.split(|b| *b == b'\n').any(|line| {
        match serde_json::from_slice::<Value>(line.trim_ascii()) {
            Ok(Value::Array(members)) => members.iter().any(is_initialize),
            Ok(message) => is_initialize(&message),
            Err(_) => {
                // A line the server reads differently (a BOM, a CR) is looked at loosely.
                line.windows(10).any(|w| w == b"initialize")
            }
        }
    })
}

/// A URI template and a URI: parsing and matching never panic. For a valid template, a URI
/// made from it with `values` (percent-encoded as a client would) matches, with those values,
/// whenever the literals after the first variable hold no letter, digit or `%` (else an
/// encoded value may contain them and the split is ambiguous).
pub fn uri_template(template: &str, uri: &str, values: &[String]) {
    let parsed = abilities_core::UriTemplate::parse(template);
    if let Some(parsed) = &parsed {
        let _ = parsed.matches(uri);
    }
    let (Some(parsed), Ok(names)) = (parsed, abilities_core::template_variables(template)) else {
        return;
    };
    if values.len() < names.len() || values.iter().any(String::is_empty) {
        return;
    }
    let mut made = template.to_owned();
    let mut literals = template[template.find('{').unwrap_or(0)..].to_owned();
    for (name, value) in names.iter().zip(values) {
        let escaped: String = value
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        made = made.replacen(&format!("{{{name}}}"), &escaped, 1);
        literals = literals.replacen(&format!("{{{name}}}"), "", 1);
    }
    let found = parsed.matches(&made);
    if literals
        .bytes()
        .any(|b| b.is_ascii_alphanumeric() || b == b'%')
    {
        return;
    }
    let found = found.unwrap_or_else(|| panic!("{template}: {made} does not match"));
    assert_eq!(found.len(), names.len(), "{template} {made}");
    for ((name, value), (found_name, found_value)) in names.iter().zip(values).zip(&found) {
        assert_eq!(name, found_name, "{template} {made}");
        assert_eq!(value, found_value, "{template} {made}");
    }
}
