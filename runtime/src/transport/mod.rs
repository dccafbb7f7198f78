//! Transports: newline-delimited JSON-RPC (stdio, or any byte stream), streamable HTTP, and an
//! in-process client.

pub(crate) mod client;
pub(crate) mod http;
pub(crate) mod stdio;

use serde_json::{Value, json};

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
