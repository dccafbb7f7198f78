//! Abilities served as resources (static, templates with typed parameters, subscriptions
//! with update notifications) and prompts (typed arguments, messages, completion), on the
//! wire.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support;

use std::sync::Mutex;

use crate::support::Lines;
use abilities::{
    AbilityError, Content, Context, ErrorCode, Server, State, ability,
    prompt::Prompt,
    resource::{Contents, ResourceNotifier},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The project's readme.
#[ability(
    semantic = "READ",
    resource = "docs://readme",
    mime_type = "text/markdown"
)]
fn readme() -> String {
    "# Readme".into()
}

/// The project's logo.
#[ability(semantic = "READ", resource = "docs://logo", title = "Logo")]
fn logo() -> Contents {
    Contents::new([Content::image([1u8, 2, 3], "image/png")])
}

#[derive(Serialize, JsonSchema)]
struct Post {
    id: u64,
    title: String,
}

/// A post by id.
#[ability(semantic = "READ", resource = "posts://{id}")]
fn post(id: u64) -> Result<Post, AbilityError> {
    if id > 100 {
        return Err(AbilityError::new(
            ErrorCode::NotFoundResource,
            format!("no post {id}"),
        ));
    }
    Ok(Post {
        id,
        title: format!("Post {id}"),
    })
}

/// A file in a directory.
#[ability(
    semantic = "READ",
    resource = "files://{dir}/{name}.txt",
    mime_type = "text/plain"
)]
fn file(dir: String, name: String) -> String {
    format!("{dir} / {name}")
}

/// Secret notes.
#[ability(
    semantic = "READ",
    resource = "secret://notes",
    permission = "notes:read"
)]
fn notes() -> String {
    "classified".into()
}

/// The current motto.
#[ability(semantic = "READ", resource = "site://motto", mime_type = "text/plain")]
fn motto(current: State<Mutex<String>>) -> String {
    current.lock().map(|m| m.clone()).unwrap_or_default()
}

/// Change the motto and tell subscribers.
#[ability(semantic = "UPDATE", flatten)]
async fn set_motto(
    motto: String,
    current: State<Mutex<String>>,
    notifier: State<ResourceNotifier>,
) -> usize {
    if let Ok(mut m) = current.lock() {
        *m = motto;
    }
    notifier.updated("site://motto").await
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Tone {
    Formal,
    Friendly,
}

/// Greet someone.
#[ability(semantic = "READ", prompt, title = "Greeting")]
fn greet(
    #[param(description = "Who to greet")] name: String,
    #[param(description = "How", default = Tone::Friendly)] tone: Tone,
    #[param(default = 1)] times: u8,
) -> Prompt {
    let hello = match tone {
        Tone::Formal => "Good day",
        Tone::Friendly => "Hi",
    };
    Prompt::new()
        .user(format!("{hello}, {name}! ").repeat(usize::from(times)))
        .assistant(Content::image([9u8], "image/png"))
        .with_description(format!("A greeting for {name}"))
}

/// Summarize a text.
#[ability(semantic = "READ", prompt, flatten)]
fn summarize(#[param(description = "The text", complete = texts)] text: String) -> String {
    format!("Summarize: {text}")
}

fn texts(_: &Context, typed: &str) -> Vec<String> {
    ["alpha", "beta", "alphabet"]
        .into_iter()
        .filter(|t| t.contains(typed))
        .map(str::to_owned)
        .collect()
}

/// Count to n.
#[ability(semantic = "READ", prompt)]
fn count(n: u32) -> Contents {
    Contents::new((1..=n).map(|i| Content::text(i.to_string())))
}

/// A prompt whose completer fails.
#[ability(semantic = "READ", prompt)]
fn fragile(#[param(complete = broken)] word: String) -> String {
    word
}

fn broken(_: &Context, _: &str) -> Vec<String> {
    panic!("the completer broke")
}

/// An ordinary tool.
#[ability(semantic = "READ")]
fn ping() -> &'static str {
    "pong"
}

fn server() -> Server {
    builder!()
        .site(abilities::Site::new("test", "https://example.com"))
        .state(Mutex::new("Ship it".to_owned()))
        .local_scopes(Vec::<String>::new())
        .build()
        .expect("the test abilities are valid")
}

async fn session() -> Lines {
    Lines::initialized(&server()).await
}

/// The `error` of a JSON-RPC response, or a panic showing the response.
fn rpc_error(response: &Value) -> &Value {
    response
        .get("error")
        .unwrap_or_else(|| panic!("expected a JSON-RPC error: {response}"))
}

#[tokio::test]
async fn capabilities_declare_resources_prompts_and_completions() {
    let mut lines = Lines::start(&server());
    let init = lines
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    let caps = &init["result"]["capabilities"];
    // Abilities can be added and removed while the server runs, and clients are told: every
    // list declares `listChanged`.
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["completions"], json!({}));
    assert_eq!(caps["tools"], json!({"listChanged": true}));
}

#[tokio::test]
async fn resources_and_prompts_are_not_tools() {
    let mut lines = session().await;
    let list = lines.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["get_site_context", "ping", "set_motto"]);
}

#[tokio::test]
async fn resources_and_templates_are_listed() {
    let mut lines = session().await;
    let list = lines.request(2, "resources/list", json!({})).await;
    assert_eq!(
        list["result"]["resources"],
        json!([
            {"uri": "docs://logo", "name": "logo", "title": "Logo", "description": "The project's logo."},
            {"uri": "site://motto", "name": "motto", "description": "The current motto.", "mimeType": "text/plain"},
            {"uri": "secret://notes", "name": "notes", "description": "Secret notes."},
            {"uri": "docs://readme", "name": "readme", "description": "The project's readme.", "mimeType": "text/markdown"}
        ])
    );
    let list = lines
        .request(3, "resources/templates/list", json!({}))
        .await;
    assert_eq!(
        list["result"]["resourceTemplates"],
        json!([
            {"uriTemplate": "files://{dir}/{name}.txt", "name": "file", "description": "A file in a directory.", "mimeType": "text/plain"},
            {"uriTemplate": "posts://{id}", "name": "post", "description": "A post by id."}
        ])
    );
}

#[tokio::test]
async fn static_resources_read_as_text_and_blobs() {
    let mut lines = session().await;
    let read = lines
        .request(2, "resources/read", json!({"uri": "docs://readme"}))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "docs://readme", "mimeType": "text/markdown", "text": "# Readme"}])
    );
    let read = lines
        .request(3, "resources/read", json!({"uri": "docs://logo"}))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "docs://logo", "mimeType": "image/png", "blob": "AQID"}])
    );
}

#[tokio::test]
async fn templates_type_their_parameters() {
    let mut lines = session().await;
    let read = lines
        .request(2, "resources/read", json!({"uri": "posts://7"}))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "posts://7", "mimeType": "application/json", "text": "{\"id\":7,\"title\":\"Post 7\"}"}])
    );
    let read = lines
        .request(
            3,
            "resources/read",
            json!({"uri": "files://my%20docs/notes.txt"}),
        )
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "my docs / notes");

    // Not a number: the pipeline's validation error, as invalid params.
    let read = lines
        .request(4, "resources/read", json!({"uri": "posts://seven"}))
        .await;
    let error = rpc_error(&read);
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"]["code"], "VALIDATION_INVALID_TYPE");

    // The handler's own not-found.
    let read = lines
        .request(5, "resources/read", json!({"uri": "posts://700"}))
        .await;
    let error = rpc_error(&read);
    assert_eq!(error["code"], -32602);
    assert_eq!(error["data"]["code"], "NOT_FOUND_RESOURCE");
    assert_eq!(error["message"], "no post 700");
}

#[tokio::test]
async fn unknown_and_forbidden_resources_are_errors() {
    let mut lines = session().await;
    for (id, uri) in [(2, "docs://nothing"), (3, "posts://"), (4, "posts://1/2")] {
        let read = lines
            .request(id, "resources/read", json!({"uri": uri}))
            .await;
        let error = rpc_error(&read);
        assert_eq!(error["code"], -32602, "{uri}");
        assert_eq!(error["data"]["code"], "NOT_FOUND_RESOURCE", "{uri}");
        assert_eq!(error["data"]["details"]["uri"], uri);
    }
    let read = lines
        .request(5, "resources/read", json!({"uri": "secret://notes"}))
        .await;
    let error = rpc_error(&read);
    assert_eq!(error["code"], -32001);
    assert_eq!(error["data"]["code"], "PERMISSION_DENIED");
    // Still serving.
    let read = lines
        .request(6, "resources/read", json!({"uri": "docs://readme"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "# Readme");
}

/// Call `set_motto` and return the notifications that arrived before its answer.
async fn set_motto_and_collect(lines: &mut Lines, id: u64, motto: &str) -> (Vec<Value>, Value) {
    lines
        .send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "set_motto", "arguments": {"input": motto}}})
            .to_string(),
        )
        .await;
    lines.until(id).await
}

#[tokio::test]
async fn subscribers_hear_of_updates_until_they_unsubscribe() {
    let mut lines = session().await;
    let sub = lines
        .request(2, "resources/subscribe", json!({"uri": "site://motto"}))
        .await;
    assert_eq!(sub["result"], json!({}));

    let (notes, answer) = set_motto_and_collect(&mut lines, 3, "Measure twice").await;
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 1}));
    assert_eq!(
        notes,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "site://motto"}})
        ]
    );
    let read = lines
        .request(4, "resources/read", json!({"uri": "site://motto"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "Measure twice");

    let unsub = lines
        .request(5, "resources/unsubscribe", json!({"uri": "site://motto"}))
        .await;
    assert_eq!(unsub["result"], json!({}));
    let (notes, answer) = set_motto_and_collect(&mut lines, 6, "Cut once").await;
    assert_eq!(answer["result"]["structuredContent"], json!({"result": 0}));
    assert!(notes.is_empty(), "{notes:?}");

    // Subscribing to nothing is an error.
    let sub = lines
        .request(7, "resources/subscribe", json!({"uri": "site://nothing"}))
        .await;
    assert_eq!(rpc_error(&sub)["data"]["code"], "NOT_FOUND_RESOURCE");
}

#[tokio::test]
async fn the_notifier_reaches_every_subscribed_session() {
    let server = server();
    let mut first = Lines::initialized(&server).await;
    let mut second = Lines::initialized(&server).await;
    for lines in [&mut first, &mut second] {
        lines
            .request(2, "resources/subscribe", json!({"uri": "posts://{id}"}))
            .await;
        lines
            .request(3, "resources/subscribe", json!({"uri": "posts://9"}))
            .await;
    }
    assert_eq!(server.resource_notifier().subscribers("posts://9"), 2);
    assert_eq!(server.resource_notifier().updated("posts://9").await, 2);
    for lines in [&mut first, &mut second] {
        assert_eq!(
            lines.next().await,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"uri": "posts://9"}})
        );
    }
}

#[tokio::test]
async fn prompts_list_their_arguments() {
    let mut lines = session().await;
    let list = lines.request(2, "prompts/list", json!({})).await;
    assert_eq!(
        list["result"]["prompts"],
        json!([
            {"name": "count", "description": "Count to n.",
             "arguments": [{"name": "n", "required": true}]},
            {"name": "fragile", "description": "A prompt whose completer fails.",
             "arguments": [{"name": "word", "required": true}]},
            {"name": "greet", "title": "Greeting", "description": "Greet someone.",
             "arguments": [
                {"name": "name", "description": "Who to greet", "required": true},
                {"name": "tone", "description": "How", "required": false},
                {"name": "times", "required": false}
             ]},
            {"name": "summarize", "description": "Summarize a text.",
             "arguments": [{"name": "input", "description": "The text", "required": true}]}
        ])
    );
}

#[tokio::test]
async fn prompts_render_messages_from_typed_arguments() {
    let mut lines = session().await;
    let got = lines
        .request(
            2,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada", "tone": "formal", "times": "2"}}),
        )
        .await;
    assert_eq!(
        got["result"],
        json!({
            "description": "A greeting for Ada",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Good day, Ada! Good day, Ada! "}},
                {"role": "assistant", "content": {"type": "image", "data": "CQ==", "mimeType": "image/png"}}
            ]
        })
    );
    // Defaults fill in; a flattened value is the `input` argument; a String is one message.
    let got = lines
        .request(
            3,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Bo"}}),
        )
        .await;
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "Hi, Bo! ");
    let got = lines
        .request(
            4,
            "prompts/get",
            json!({"name": "summarize", "arguments": {"input": "a long text"}}),
        )
        .await;
    assert_eq!(
        got["result"],
        json!({"description": "Summarize a text.", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Summarize: a long text"}}
        ]})
    );
    // Content blocks: one user message each.
    let got = lines
        .request(
            5,
            "prompts/get",
            json!({"name": "count", "arguments": {"n": "2"}}),
        )
        .await;
    assert_eq!(
        got["result"]["messages"],
        json!([
            {"role": "user", "content": {"type": "text", "text": "1"}},
            {"role": "user", "content": {"type": "text", "text": "2"}}
        ])
    );
}

#[tokio::test]
async fn bad_prompt_arguments_are_invalid_params() {
    let mut lines = session().await;
    let cases = [
        (
            json!({"name": "greet", "arguments": {}}),
            "VALIDATION_MISSING_PARAM",
        ),
        (
            json!({"name": "greet", "arguments": {"name": "A", "times": "many"}}),
            "VALIDATION_INVALID_TYPE",
        ),
        (
            json!({"name": "greet", "arguments": {"name": "A", "tone": "rude"}}),
            "VALIDATION_INVALID_VALUE",
        ),
        (json!({"name": "nope"}), "NOT_FOUND_ABILITY"),
        // A tool is not a prompt.
        (json!({"name": "ping"}), "NOT_FOUND_ABILITY"),
    ];
    for (id, (params, code)) in (2..).zip(cases) {
        let got = lines.request(id, "prompts/get", params.clone()).await;
        let error = rpc_error(&got);
        assert_eq!(error["code"], -32602, "{params}");
        assert_eq!(error["data"]["code"], code, "{params}: {error}");
    }
}

#[tokio::test]
async fn completion_offers_schema_values_and_completers() {
    let mut lines = session().await;
    let complete = |id: u64, reference: Value, name: &str, value: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "completion/complete", "params": {
            "ref": reference, "argument": {"name": name, "value": value}}})
    };
    let greet = json!({"type": "ref/prompt", "name": "greet"});
    let cases = [
        (greet.clone(), "tone", "F", json!(["formal", "friendly"])),
        (greet.clone(), "tone", "fo", json!(["formal"])),
        (greet.clone(), "name", "A", json!([])),
        (
            json!({"type": "ref/prompt", "name": "summarize"}),
            "input",
            "ph",
            json!(["alpha", "alphabet"]),
        ),
        (
            json!({"type": "ref/resource", "uri": "posts://{id}"}),
            "id",
            "1",
            json!([]),
        ),
    ];
    for (id, (reference, name, value, expected)) in (2..).zip(cases) {
        lines
            .send(&complete(id, reference, name, value).to_string())
            .await;
        let got = lines.response(&json!(id)).await;
        assert_eq!(
            got["result"]["completion"]["values"], expected,
            "{name}={value}: {got}"
        );
    }
    // An unknown argument or reference, and a completer that panics: errors, and the server
    // goes on.
    for (id, reference, name, code) in [
        (10, greet.clone(), "colour", -32602),
        (
            11,
            json!({"type": "ref/prompt", "name": "nope"}),
            "x",
            -32602,
        ),
        (
            12,
            json!({"type": "ref/prompt", "name": "fragile"}),
            "word",
            -32603,
        ),
    ] {
        lines
            .send(&complete(id, reference, name, "").to_string())
            .await;
        let got = lines.response(&json!(id)).await;
        assert_eq!(rpc_error(&got)["code"], code, "{got}");
    }
    lines
        .send(&complete(13, greet, "tone", "").to_string())
        .await;
    let got = lines.response(&json!(13)).await;
    assert_eq!(
        got["result"]["completion"],
        json!({"values": ["formal", "friendly"], "total": 2, "hasMore": false})
    );
}

#[tokio::test]
async fn in_process_calls_reach_resources_and_prompts_by_name() {
    let server = server();
    let out = server
        .registry()
        .call(Context::new(), "post", json!({"id": 3}))
        .await
        .expect("the post");
    assert_eq!(out, json!({"id": 3, "title": "Post 3"}));
    let output = server
        .registry()
        .get("greet")
        .expect("greet")
        .call_output(Context::new(), json!({"name": "Cy"}))
        .await
        .expect("a prompt");
    let prompt = output.prompt().expect("prompt messages");
    assert_eq!(prompt.messages().len(), 2);
    assert_eq!(prompt.description(), Some("A greeting for Cy"));
}

#[tokio::test]
async fn subscriptions_listen_streams_updates_of_accepted_uris() {
    use abilities::protocol::rmcp::model::{ServerNotification, SubscriptionFilter};

    let server = server();
    // A client of protocol 2026-07-28, where subscriptions are `subscriptions/listen`.
    let client = support::client_2026(&server).await;
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["site://motto".into(), "site://nothing".into()]);
    let mut subscription = client.peer().listen(filter).await.expect("acknowledged");
    // Only the URI the server serves is accepted.
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec!["site://motto".to_owned()])
    );
    assert_eq!(server.resource_notifier().updated("site://motto").await, 1);
    let notification =
        tokio::time::timeout(std::time::Duration::from_secs(10), subscription.next())
            .await
            .expect("a notification in time")
            .expect("the stream is open")
            .expect("a notification");
    match notification {
        ServerNotification::ResourceUpdatedNotification(updated) => {
            assert_eq!(updated.params.uri, "site://motto");
        }
        other => panic!("unexpected notification: {other:?}"),
    }
    let _ = client.cancel().await;
}
