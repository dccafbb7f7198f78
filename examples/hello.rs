//! The smallest server: two abilities over stdio, logs on stderr.
//!
//! `cargo run --example hello` (then speak MCP on stdin), or connect a client to it:
//! `npx @modelcontextprotocol/inspector --cli cargo run -q --example hello --method tools/list`.

use abilities::{AbilityError, Server, ability};

/// Greet someone by name.
#[ability(semantic = "READ", flatten)]
fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Divide one number by another.
#[ability(semantic = "READ")]
fn divide(dividend: f64, divisor: f64) -> Result<f64, AbilityError> {
    if divisor == 0.0 {
        return Err(AbilityError::invalid("the divisor must not be zero"));
    }
    Ok(dividend / divisor)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // stdout carries the protocol: logs go to stderr (`RUST_LOG=debug` for more).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let server = Server::builder().name("hello", "0.1.0").build()?;
    server.serve_stdio().await?;
    Ok(())
}
