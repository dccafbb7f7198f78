// cargo run -p abilities-bench --example bare_site -- --http 127.0.0.1:8091
//! The floor of this stack: the `site` example's `my-plugin-count-posts` as a bare axum
//! (HTTP) or line-by-line (stdio) JSON-RPC endpoint over the same SQLite database, with no
//! MCP machinery at all: no sessions kept, no schemas, no validation. `loadgen` runs it beside
//! `site` and `rmcp_site`, so its table shows how far both frameworks are from the bare cost
//! of parsing, counting and answering.

use abilities_examples::site;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abilities::http::axum::{self, Router, body::Bytes, extract::State, http::StatusCode};
use clap::Parser;
use serde_json::{Value, json};
use site::{Db, PostType};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Serve the bare endpoint.
#[derive(Parser)]
struct Args {
    /// Serve HTTP at /mcp on this address instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "site.db")]
    db: PathBuf,
}

/// The answer to one message, `None` for a notification.
async fn answer(db: &Db, message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bare_site", "version": "1"}
        }),
        Some("tools/call") if message["params"]["name"] == "my-plugin-count-posts" => {
            let post_type: Option<PostType> =
                serde_json::from_value(message["params"]["arguments"]["input"].clone()).ok();
            let count = match post_type {
                Some(t) => Some(db.count(t).await),
                None => None,
            };
            match count {
                Some(Ok(n)) => json!({
                    "content": [{"type": "text", "text": json!({"result": n}).to_string()}],
                    "structuredContent": {"result": n},
                    "isError": false
                }),
                _ => json!({"content": [{"type": "text", "text": "bad call"}], "isError": true}),
            }
        }
        _ => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            );
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

async fn post(State(db): State<Arc<Db>>, body: Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    static SESSIONS: AtomicU64 = AtomicU64::new(1);
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match answer(&db, &message).await {
        None => StatusCode::ACCEPTED.into_response(),
        Some(reply) => {
            let session = SESSIONS.fetch_add(1, Ordering::Relaxed).to_string();
            (
                [
                    ("content-type", "application/json".to_owned()),
                    ("mcp-session-id", session),
                ],
                reply.to_string(),
            )
                .into_response()
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let run = async {
        let db = Arc::new(Db::open(&args.db)?);
        match args.http {
            Some(addr) => {
                let router = Router::new()
                    .route("/mcp", axum::routing::post(post))
                    .with_state(db);
                let listener = tokio::net::TcpListener::bind(addr).await?;
                println!("http://{}/mcp", listener.local_addr()?);
                abilities::http::serve_router(listener, router).await?;
            }
            None => {
                // Each line answered on a task of its own, as the frameworks do, and one
                // writer, so the floor is not a queue.
                let (replies, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<String>();
                let writer = tokio::spawn(async move {
                    let mut stdout = tokio::io::stdout();
                    while let Some(mut text) = outgoing.recv().await {
                        text.push('\n');
                        if stdout.write_all(text.as_bytes()).await.is_err()
                            || stdout.flush().await.is_err()
                        {
                            break;
                        }
                    }
                });
                let mut lines = BufReader::new(tokio::io::stdin()).lines();
                while let Some(line) = lines.next_line().await? {
                    let (db, replies) = (Arc::clone(&db), replies.clone());
                    tokio::spawn(async move {
                        let reply = match serde_json::from_str::<Value>(&line) {
                            Ok(message) => answer(&db, &message).await,
                            Err(_) => None,
                        };
                        if let Some(reply) = reply {
                            let _ = replies.send(reply.to_string());
                        }
                    });
                }
                drop(replies);
                let _ = writer.await;
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
