//! A JSON-RPC error answer the transports make themselves (a body rmcp never sees, a refused
//! id, a batch member), typed until the moment it is written: as a line, as a member of a
//! batch's array, or as an HTTP response.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde::Serialize;
use serde_json::Value;

/// `{"jsonrpc": "2.0", "id": …, "error": {"code": …, "message": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ErrorAnswer {
    jsonrpc: &'static str,
    id: Value,
    error: Body,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Body {
    code: i32,
    message: String,
}

/// -32600: JSON, but no message the server takes.
pub(crate) const INVALID_REQUEST: i32 = -32600;
/// -32602: a method's params the server refuses.
pub(crate) const INVALID_PARAMS: i32 = -32602;

impl ErrorAnswer {
    /// The error `code` with `message`, answering the request `id` (`null` when it cannot be
    /// told).
    pub(crate) fn new(id: Value, code: i32, message: impl Into<String>) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            error: Body {
                code,
                message: message.into(),
            },
        }
    }

    /// -32600 "Invalid Request", `why` being the whole message.
    pub(crate) fn invalid(id: Value, why: impl Into<String>) -> Self {
        Self::new(id, INVALID_REQUEST, why)
    }

    /// The answer as one line of JSON (no newline).
    pub(crate) fn line(&self) -> Vec<u8> {
        // A struct of strings, numbers and a `Value`: serializing cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The answer as a JSON value, a member of a batch's answer.
    pub(crate) fn into_value(self) -> Value {
        serde_json::json!({
            "jsonrpc": self.jsonrpc,
            "id": self.id,
            "error": {"code": self.error.code, "message": self.error.message},
        })
    }

    /// The answer as an HTTP response with `status`.
    pub(crate) fn response(&self, status: StatusCode) -> Response {
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            self.line(),
        )
            .into_response()
    }

    /// The answer as `503` with `Retry-After: 1`: the client tries again in a second, through
    /// the balancer, on this replica or another.
    pub(crate) fn retry_soon(&self) -> Response {
        let mut response = self.response(StatusCode::SERVICE_UNAVAILABLE);
        response.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_and_a_value_say_the_same() {
        let answer = ErrorAnswer::new(serde_json::json!(7), INVALID_PARAMS, "bad cursor");
        let line: Value = serde_json::from_slice(&answer.line()).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "bad cursor"}})
        );
        assert_eq!(answer.into_value(), line);
    }
}
