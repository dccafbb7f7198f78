// cargo run --example axum_app -- --addr 127.0.0.1:8082
//! An existing axum application (its own `/health` and REST `/todos` routes and state) that
//! mounts the MCP endpoint at `/mcp`; the REST routes and the abilities share one database.

use abilities_examples::todo;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use abilities::http::axum::extract::{Path, State};
use abilities::http::axum::http::StatusCode;
use abilities::http::axum::routing::get;
use abilities::http::axum::{Json, Router};
use abilities::{
    AbilityError, Caller, ErrorCode, Server, aql::CollectionQuery, auth::StaticTokens,
};
use clap::Parser;
use serde::Deserialize;
use todo::{Priority, Todo, TodoDb};

/// The application: REST and MCP over one database.
#[derive(Parser)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8082")]
    addr: SocketAddr,
    /// The SQLite database (created and seeded if missing).
    #[arg(long, default_value = "todo.db")]
    db: PathBuf,
}

/// The body of `POST /todos`.
#[derive(Deserialize)]
struct NewTodo {
    title: String,
    priority: Option<Priority>,
}

type AppState = Arc<TodoDb>;
type ApiResult<T> = Result<Json<T>, (StatusCode, Json<AbilityError>)>;

fn api_error(error: AbilityError) -> (StatusCode, Json<AbilityError>) {
    let status = match error.code() {
        ErrorCode::NotFoundResource => StatusCode::NOT_FOUND,
        code if code.is_validation() => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, Json(error))
}

async fn list(State(db): State<AppState>) -> ApiResult<Vec<Todo>> {
    db.list(None, 1000, 0, &CollectionQuery::default())
        .await
        .map(|page| Json(page.items))
        .map_err(api_error)
}

async fn show(State(db): State<AppState>, Path(id): Path<i64>) -> ApiResult<Todo> {
    db.get(id).await.map(Json).map_err(api_error)
}

async fn create(State(db): State<AppState>, Json(new): Json<NewTodo>) -> ApiResult<Todo> {
    db.create(&new.title, new.priority.unwrap_or(Priority::Medium))
        .await
        .map(Json)
        .map_err(api_error)
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
    let db: AppState = Arc::new(
        TodoDb::open(&args.db).map_err(|e| format!("cannot open {}: {e}", args.db.display()))?,
    );
    // The abilities take `State<TodoDb>`: hand them the application's own database.
    let mcp = Server::builder()
        .registry(todo::registry()?)
        .name("abilities-axum-app-example", env!("CARGO_PKG_VERSION"))
        .shared_state(Arc::clone(&db))
        .authenticator(StaticTokens::new().allow_anonymous(Caller::trusted("anonymous")))
        .build()?;
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/todos", get(list).post(create))
        .route("/todos/{id}", get(show))
        .with_state(db)
        .nest_service("/mcp", mcp.http_service());
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let addr = listener.local_addr()?;
    eprintln!(
        "REST at http://{addr}/todos, health at http://{addr}/health, MCP at http://{addr}/mcp"
    );
    println!("http://{addr}/mcp");
    abilities::http::serve_router(listener, app).await?;
    Ok(())
}
