//! Newline-delimited JSON-RPC over stdio or any byte stream.
//!
//! Lines are checked before they reach the protocol engine, so a line that is not JSON gets
//! the JSON-RPC parse error (-32700, `id: null`) and a JSON value that is not a message gets
//! an invalid-request error (-32600); either way the server keeps serving.

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::{Server, ServerError};

/// The longest line accepted; a longer one is answered with an error and skipped.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

impl Server {
    /// Serve over stdin/stdout until stdin closes. Log to stderr only: stdout carries the
    /// protocol.
    pub async fn serve_stdio(&self) -> Result<(), ServerError> {
        self.serve_stream(tokio::io::stdin(), tokio::io::stdout())
            .await
    }

    /// Serve newline-delimited JSON-RPC read from `input` and written to `output`, as the local
    /// caller, until `input` closes.
    pub async fn serve_stream<R, W>(&self, input: R, output: W) -> Result<(), ServerError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (engine_io, pump_io) = tokio::io::duplex(1 << 16);
        let (from_engine, mut to_engine) = tokio::io::split(pump_io);
        let (lines_out, mut lines) = mpsc::channel::<Vec<u8>>(256);

        let writer = tokio::spawn(async move {
            let mut output = output;
            while let Some(mut line) = lines.recv().await {
                line.push(b'\n');
                if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                    break;
                }
            }
        });

        let engine_out = lines_out.clone();
        let relay = tokio::spawn(async move {
            let mut reader = BufReader::new(from_engine);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let trimmed = line.strip_suffix(b"\n").unwrap_or(&line).to_vec();
                        if engine_out.send(trimmed).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });

        let handler = self.local_handler();
        let engine = tokio::spawn(async move {
            match handler.serve(engine_io).await {
                Ok(running) => running
                    .waiting()
                    .await
                    .map(|_| ())
                    .map_err(|e| ServerError::Session(e.to_string())),
                // The stream closed before the client initialized: nothing to serve.
                Err(e) => {
                    tracing::debug!(error = %e, "session ended before initialization");
                    Ok(())
                }
            }
        });

        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = AsyncReadExt::take(&mut reader, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await?;
            if read == 0 {
                break;
            }
            if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                reader.read_until(b'\n', &mut rest).await?;
                let error = error_line(
                    &Value::Null,
                    -32600,
                    format!("Invalid Request: message exceeds {MAX_LINE_BYTES} bytes"),
                );
                if lines_out.send(error).await.is_err() {
                    break;
                }
                continue;
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match check_line(text) {
                Ok(()) => {
                    to_engine.write_all(text).await?;
                    to_engine.write_all(b"\n").await?;
                }
                Err(error) => {
                    if lines_out.send(error).await.is_err() {
                        break;
                    }
                }
            }
        }
        drop(to_engine);
        let result = engine.await.unwrap_or(Ok(()));
        let _ = relay.await;
        drop(lines_out);
        let _ = writer.await;
        result
    }
}

/// `Ok` for a line that is a JSON-RPC message; otherwise the error line to answer with.
fn check_line(text: &[u8]) -> Result<(), Vec<u8>> {
    let value = serde_json::from_slice::<Value>(text)
        .map_err(|e| error_line(&Value::Null, -32700, format!("Parse error: {e}")))?;
    check_message(&value).map_err(|(id, message)| error_line(&id, -32600, message))
}

/// Is `value` shaped like a JSON-RPC 2.0 message? On error: the id to answer with and why.
pub(crate) fn check_message(value: &Value) -> Result<(), (Value, String)> {
    let Value::Object(message) = value else {
        let why = if value.is_array() {
            "batches are not supported"
        } else {
            "a message must be a JSON object"
        };
        return Err((Value::Null, format!("Invalid Request: {why}")));
    };
    let id = match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            "Invalid Request: \"jsonrpc\" must be \"2.0\"".to_owned(),
        ));
    }
    let shaped = match message.get("method") {
        Some(method) => method.is_string(),
        None => message.contains_key("result") || message.contains_key("error"),
    };
    if !shaped {
        return Err((
            id,
            "Invalid Request: a message needs a string \"method\", or a \"result\" or \"error\""
                .to_owned(),
        ));
    }
    Ok(())
}

pub(crate) fn error_line(id: &Value, code: i32, message: String) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}
