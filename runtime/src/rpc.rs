//! JSON-RPC answers the protocol adapter gives for requests rmcp could not type.
//!
//! rmcp turns a request whose params do not fit the method's type into a custom request,
//! which would be answered "method not found" (-32601). For a method the server serves, the
//! truth is "invalid params" (-32602), with the reason.

#![allow(
    deprecated,
    reason = "rmcp marks logging deprecated (SEP-2577), but clients of today's protocol versions set levels"
)]

use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, ErrorCode, ErrorData, GetPromptRequestParams,
    InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The error for a request rmcp left untyped: -32602 with the reason for a method the server
/// knows, -32601 for any other.
pub(crate) fn untyped_request(method: &str, params: Option<Value>) -> ErrorData {
    let reason = match method {
        "tools/call" => reason::<CallToolRequestParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            reason::<Option<PaginatedRequestParams>>(params)
        }
        "resources/read" => reason::<ReadResourceRequestParams>(params),
        "resources/subscribe" => reason::<SubscribeRequestParams>(params),
        "resources/unsubscribe" => reason::<UnsubscribeRequestParams>(params),
        "prompts/get" => reason::<GetPromptRequestParams>(params),
        "completion/complete" => reason::<CompleteRequestParams>(params),
        "logging/setLevel" => reason::<SetLevelRequestParams>(params),
        "initialize" => reason::<InitializeRequestParams>(params),
        _ => {
            let shown: String = method.chars().take(100).collect();
            return ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {shown}"),
                None,
            );
        }
    };
    ErrorData::invalid_params(format!("Invalid params for {method}: {reason}"), None)
}

/// Why `params` do not make a `T`.
fn reason<T: DeserializeOwned>(params: Option<Value>) -> String {
    match serde_json::from_value::<T>(params.unwrap_or(Value::Null)) {
        Err(error) => error.to_string(),
        // The params alone are fine: something else about the request was not.
        Ok(_) => "the request does not match the method's schema".to_owned(),
    }
}
