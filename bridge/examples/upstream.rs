//! A small MCP server written with `#[ability]`, for the bridge's tests to run behind it:
//! tools of every classification, progress and logs, a question for the user, a failure, a
//! crash, a tool list that grows, a resource, a template and a prompt.
//!
//! `cargo run -p abilities-bridge --example upstream -- [--page-size N] [--hang] [--fail-start] [--http]`

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use abilities::{
    Ability, AbilityError, Context, Semantic, Server, State, ability,
    client::{ElicitAction, LogLevel},
    prompt::Prompt,
};
use serde_json::{Map, Value, json};

/// A JSON object: its schema is an object's, so results are not wrapped under `result`.
type Obj = Map<String, Value>;

fn obj(value: Value) -> Obj {
    match value {
        Value::Object(map) => map,
        other => Map::from_iter([("value".to_owned(), other)]),
    }
}

/// How many times each tool ran in this process.
#[derive(Default)]
struct Calls(Mutex<BTreeMap<String, u64>>);

impl Calls {
    fn count(&self, tool: &str) {
        let mut calls = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *calls.entry(tool.to_owned()).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Say the text back.
#[ability(semantic = "READ")]
fn echo(calls: State<Calls>, text: String) -> Obj {
    calls.count("echo");
    obj(json!({"echoed": text}))
}

/// Add two integers.
#[ability(semantic = "EXECUTE")]
fn add(calls: State<Calls>, a: i64, b: i64) -> Obj {
    calls.count("add");
    obj(json!({"sum": a + b}))
}

/// Delete a note.
#[ability(semantic = "EXECUTE")]
fn delete_note(calls: State<Calls>, id: u32) -> Obj {
    calls.count("delete_note");
    obj(json!({"deleted": id}))
}

/// Empty every cache.
#[ability(semantic = "EXECUTE")]
fn purge_cache(calls: State<Calls>) -> Obj {
    calls.count("purge_cache");
    obj(json!({"purged": true}))
}

/// How many times each tool ran.
#[ability(semantic = "READ")]
fn call_counts(calls: State<Calls>) -> Obj {
    obj(json!(calls.snapshot()))
}

/// Report progress and log each step, then answer.
#[ability(semantic = "READ")]
async fn steps(ctx: &Context, count: u32) -> Obj {
    for i in 1..=count {
        ctx.progress(
            f64::from(i),
            Some(f64::from(count)),
            Some(&format!("step {i}")),
        )
        .await;
        ctx.log(LogLevel::Info, json!({"step": i})).await;
    }
    obj(json!({"steps": count}))
}

/// Wait, then answer; a call stopped early (cancelled) is counted as `wait_ms cancelled`.
#[ability(semantic = "READ")]
async fn wait_ms(calls: State<Calls>, ms: u64) -> Obj {
    struct Stopped(State<Calls>, bool);
    impl Drop for Stopped {
        fn drop(&mut self) {
            if !self.1 {
                self.0.count("wait_ms cancelled");
            }
        }
    }
    let mut guard = Stopped(calls, false);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    guard.1 = true;
    guard.0.count("wait_ms");
    obj(json!({"waited": ms}))
}

/// Ask the user's name.
#[ability(semantic = "READ")]
async fn ask_name(ctx: &Context) -> Result<Obj, AbilityError> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let answer = ctx.elicit("What is your name?", schema).await?;
    Ok(obj(match answer.action {
        ElicitAction::Accept => {
            json!({"hello": answer.content.and_then(|c| c.get("name").cloned())})
        }
        _ => json!({"hello": null}),
    }))
}

/// Ask the client's model.
#[ability(semantic = "READ")]
async fn ask_model(ctx: &Context, prompt: String) -> Result<Obj, AbilityError> {
    let answer = ctx.sample_text(&prompt, 20).await?;
    Ok(obj(json!({"model_said": answer})))
}

/// Always fails.
#[ability(semantic = "READ")]
fn fail() -> Result<Obj, AbilityError> {
    Err(AbilityError::failed("the disk is on fire"))
}

/// Exit the process in the middle of the call.
#[ability(semantic = "EXECUTE")]
async fn crash() -> Obj {
    eprintln!("crashing on purpose");
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::process::exit(3)
}

/// Add a tool named `grown` (the tool list changes).
#[ability(semantic = "EXECUTE")]
fn grow(server: State<ServerSlot>) -> Result<Obj, AbilityError> {
    let Some(server) = server.get() else {
        return Err(AbilityError::internal("no server yet"));
    };
    let grown = Ability::builder("grown", Semantic::Read)
        .description("A tool added while running.")
        .handler(|_ctx, _args: Value| async move { Ok(json!({"grown": true})) })
        .build()
        .map_err(|e| AbilityError::internal(e.to_string()))?;
    server
        .abilities()
        .add(grown)
        .map_err(|e| AbilityError::conflict(e.to_string()))?;
    Ok(obj(json!({"added": "grown"})))
}

/// The running server, for `grow`.
#[derive(Default)]
struct ServerSlot(std::sync::OnceLock<Server>);

impl ServerSlot {
    fn get(&self) -> Option<&Server> {
        self.0.get()
    }
}

/// The notes' read-me.
#[ability(
    semantic = "READ",
    resource = "note://readme",
    mime_type = "text/plain"
)]
fn readme() -> String {
    "Notes are kept here.".to_owned()
}

/// A note by id.
#[ability(semantic = "READ", resource = "note://{id}", mime_type = "text/plain")]
fn note(id: String) -> String {
    format!("note {id}")
}

/// Greet someone.
#[ability(semantic = "READ", prompt)]
fn greet(name: String) -> Prompt {
    Prompt::new().user(format!("Say hello to {name}."))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--fail-start") {
        eprintln!("fatal: cannot open the database at /nonexistent");
        std::process::exit(1);
    }
    if args.iter().any(|a| a == "--hang") {
        eprintln!("starting very slowly");
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    let page_size = args
        .iter()
        .position(|a| a == "--page-size")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok());
    let slot = std::sync::Arc::new(ServerSlot::default());
    let mut builder = Server::builder()
        .name("upstream", "1.0.0")
        .state(Calls::default())
        .shared_state(std::sync::Arc::clone(&slot));
    if let Some(size) = page_size {
        builder = builder.page_size(size);
    }
    if args.iter().any(|a| a == "--skills") {
        // A skill with a sub-directory and a binary file, for the bridge to serve.
        let skill = abilities::skill::Skill::new(
            "pdf",
            [
                (
                    "SKILL.md",
                    b"---\nname: pdf\ndescription: \"Fill PDF forms.\"\n---\nUse the form tools.\n"
                        .to_vec(),
                ),
                ("forms/fields.md", b"Forms have fields.\n".to_vec()),
                ("logo.png", vec![0x89, b'P', b'N', b'G', 0, 1, 2, 255]),
            ],
        );
        match skill {
            Ok(skill) => builder = builder.skill(skill),
            Err(error) => {
                eprintln!("{error}");
                std::process::exit(2);
            }
        }
    }
    let server = match builder.build() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };
    let _ = slot.0.set(server.clone());
    if args.iter().any(|a| a == "--http") {
        // Streamable HTTP on a free port of 127.0.0.1; the URL goes to stdout.
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("{error}");
                std::process::exit(2);
            }
        };
        if let Ok(addr) = listener.local_addr() {
            println!("http://{addr}/mcp");
        }
        if let Err(error) = abilities::http::serve_router(listener, server.app()).await {
            eprintln!("{error}");
        }
        return;
    }
    if let Err(error) = server.serve_stdio().await {
        eprintln!("{error}");
    }
}
