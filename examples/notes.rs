// cargo run --example notes -- --addr 127.0.0.1:8083
//! A first app, as the guide builds it: a small axum service (`GET /health`) with five
//! abilities mounted at `/mcp` over an in-memory store. Add a note, list them a page at a
//! time, get one by id, delete one (which the user confirms), and export them all as a
//! background task. Its tests use only the public test client (`cargo test --example notes`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use abilities::http::axum::Router;
use abilities::http::axum::routing::get;
use abilities::{AbilityError, Caller, Context, Server, State, ability, auth::StaticTokens};
use clap::Parser;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

/// The notes, in memory.
#[derive(Default)]
struct Notes {
    rows: Mutex<BTreeMap<u64, Note>>,
}

/// A note.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
struct Note {
    id: u64,
    title: String,
    body: String,
}

/// One page of notes, and where the next starts (absent on the last page).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Page {
    notes: Vec<Note>,
    next_after: Option<u64>,
}

/// Which note.
#[derive(Debug, Deserialize, JsonSchema)]
struct NoteRef {
    /// The note's id.
    id: u64,
}

/// What an export wrote.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Export {
    exported: usize,
    notes: Vec<Note>,
}

/// Add a note.
#[ability(semantic = "CREATE")]
async fn add_note(notes: State<Notes>, title: String, body: String) -> Note {
    let mut rows = notes.rows.lock().await;
    let id = rows.keys().next_back().map_or(1, |last| last + 1);
    let note = Note { id, title, body };
    rows.insert(id, note.clone());
    note
}

/// List notes in id order, `limit` at a time, after the id `after`.
#[ability(semantic = "READ")]
async fn list_notes(
    notes: State<Notes>,
    #[param(description = "Start after this id (the last page's `next_after`).")] after: Option<
        u64,
    >,
    #[param(description = "At most this many notes (1-100).", default = 20)] limit: u8,
) -> Result<Page, AbilityError> {
    if !(1..=100).contains(&limit) {
        return Err(AbilityError::invalid("limit must be 1-100"));
    }
    let rows = notes.rows.lock().await;
    let start = after.map_or(0, |after| after + 1);
    let mut page: Vec<Note> = rows
        .range(start..)
        .take(usize::from(limit) + 1)
        .map(|(_, n)| n.clone())
        .collect();
    let more = page.len() > usize::from(limit);
    page.truncate(usize::from(limit));
    let next_after = more.then(|| page.last().map(|n| n.id)).flatten();
    Ok(Page {
        notes: page,
        next_after,
    })
}

/// Get one note by id.
#[ability(semantic = "READ", flatten)]
async fn get_note(notes: State<Notes>, note: NoteRef) -> Result<Note, AbilityError> {
    notes
        .rows
        .lock()
        .await
        .get(&note.id)
        .cloned()
        .ok_or_else(|| AbilityError::not_found(format!("no note {}", note.id)))
}

/// Delete a note. The user confirms it first.
#[ability(semantic = "DELETE", flatten)]
async fn delete_note(notes: State<Notes>, note: NoteRef) -> Result<Note, AbilityError> {
    notes
        .rows
        .lock()
        .await
        .remove(&note.id)
        .ok_or_else(|| AbilityError::not_found(format!("no note {}", note.id)))
}

/// Export every note, working `delay_ms` first; a background task when the client asks.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn export_notes(
    ctx: &Context,
    notes: State<Notes>,
    #[param(
        description = "Work this long first, in milliseconds (0-600000).",
        default = 0
    )]
    delay_ms: u32,
) -> Result<Export, AbilityError> {
    if delay_ms > 600_000 {
        return Err(AbilityError::invalid("delay_ms must be 0-600000"));
    }
    const STEPS: u32 = 10;
    for step in 0..STEPS {
        ctx.progress(f64::from(step), Some(f64::from(STEPS)), Some("exporting"))
            .await;
        tokio::time::sleep(Duration::from_millis(u64::from(delay_ms / STEPS))).await;
    }
    let notes: Vec<Note> = notes.rows.lock().await.values().cloned().collect();
    Ok(Export {
        exported: notes.len(),
        notes,
    })
}

/// The MCP server over `notes`: every ability of this file.
fn server(notes: Arc<Notes>) -> Result<Server, abilities::ServerError> {
    Server::builder()
        .name("notes", env!("CARGO_PKG_VERSION"))
        .shared_state(notes)
        .authenticator(StaticTokens::new().allow_anonymous(Caller::trusted("anonymous")))
        .build()
}

/// The notes app.
#[derive(Parser)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8083")]
    addr: SocketAddr,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,rmcp=error".into()),
        )
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mcp = server(Arc::new(Notes::default()))?;
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .nest_service("/mcp", mcp.http_service());
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let addr = listener.local_addr()?;
    eprintln!("health at http://{addr}/health, MCP at http://{addr}/mcp");
    println!("http://{addr}/mcp");
    abilities::http::serve_router(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use abilities::client::Elicitation;
    use abilities::testing::{Started, TestClient, tool_error};
    use serde_json::{Value, json};

    async fn with_notes(client: &TestClient, n: usize) {
        for i in 0..n {
            let added = client
                .call("add_note", json!({"title": format!("n{i}"), "body": "b"}))
                .await
                .unwrap();
            assert_eq!(added.is_error, Some(false), "{added:?}");
        }
    }

    fn fresh() -> Server {
        server(Arc::new(Notes::default())).unwrap()
    }

    #[tokio::test]
    async fn notes_are_added_listed_a_page_at_a_time_and_got_by_id() {
        let client = fresh().connect().await.unwrap();
        with_notes(&client, 3).await;
        let first = client
            .call("list_notes", json!({"limit": 2}))
            .await
            .unwrap();
        let page = first.structured_content.unwrap();
        assert_eq!(page["notes"].as_array().unwrap().len(), 2);
        assert_eq!(page["next_after"], 2);
        let rest = client
            .call("list_notes", json!({"limit": 2, "after": 2}))
            .await
            .unwrap();
        let rest = rest.structured_content.unwrap();
        assert_eq!(rest["notes"][0]["id"], 3);
        assert_eq!(rest["next_after"], Value::Null);
        // `flatten` on a struct: its fields are the tool's parameters.
        let got = client.call("get_note", json!({"id": 2})).await.unwrap();
        assert_eq!(got.structured_content.unwrap()["title"], "n1");
    }

    #[tokio::test]
    async fn a_delete_is_confirmed_by_the_user_or_with_a_token() {
        let server = fresh();
        let user = server
            .test_client()
            .answer_elicitation(|_| Elicitation::accept(json!({"confirm": true})))
            .connect()
            .await
            .unwrap();
        with_notes(&user, 2).await;
        let deleted = user.call("delete_note", json!({"id": 1})).await.unwrap();
        assert_eq!(deleted.structured_content.unwrap()["id"], 1);
        assert_eq!(user.requests()[0]["method"], "elicitation/create");

        // A client that cannot ask its user (the Inspector's CLI) gets a token to retry with.
        let cli = server.connect().await.unwrap();
        let refused = cli.call("delete_note", json!({"id": 2})).await.unwrap();
        assert_eq!(refused.is_error, Some(true));
        let error = tool_error(&refused).unwrap();
        assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{error}");
        let token = error["details"]["confirmation_token"].as_str().unwrap();
        let deleted = cli
            .call("delete_note", json!({"id": 2, "_confirmation": token}))
            .await
            .unwrap();
        assert_eq!(deleted.structured_content.unwrap()["id"], 2);
        let replayed = cli
            .call("delete_note", json!({"id": 2, "_confirmation": token}))
            .await
            .unwrap();
        assert_eq!(tool_error(&replayed).unwrap()["code"], "TOKEN_ALREADY_USED");
    }

    #[tokio::test]
    async fn the_export_runs_as_a_task_of_either_version() {
        for version in ["2025-11-25", "2026-07-28"] {
            let client = fresh()
                .test_client()
                .protocol_version(version)
                .tasks()
                .connect()
                .await
                .unwrap();
            with_notes(&client, 4).await;
            let Started::Task(id) = client
                .start("export_notes", json!({"delay_ms": 50}))
                .await
                .unwrap()
            else {
                panic!("{version}: the export answered at once");
            };
            let result = client
                .task_result(&id, Duration::from_secs(10))
                .await
                .unwrap();
            assert_eq!(
                result.structured_content.unwrap()["exported"],
                4,
                "{version}"
            );
        }
    }
}
