//! The JSON-RPC error channel: how an [`AbilityError`] travels where a surface answers with
//! JSON-RPC errors, and the answers the protocol adapter gives for requests rmcp could not
//! type.
//!
//! rmcp turns a request whose params do not fit the method's type into a custom request,
//! which would be answered "method not found" (-32601). For a method the server serves, the
//! truth is "invalid params" (-32602), with the reason.

#![allow(
    deprecated,
    reason = "rmcp marks logging deprecated (SEP-2577), but clients of today's protocol versions set levels"
)]

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, CompleteRequestParams, ErrorCode, ErrorData,
    GetPromptRequestParams, GetTaskParams, InitializeRequestParams, PaginatedRequestParams,
    ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionsListenRequestParams, UnsubscribeRequestParams, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{AbilityError, ErrorCode as Code};

/// The JSON-RPC code an error travels as (`resources/read`, `prompts/get`, completion,
/// standard mode): `-32602` (invalid params) for what the caller sent (validation, unknown
/// ability or resource, another site, an idempotency key reused), `-32001` for a missing
/// scope, `-32000` for a limit or rate reached, a call still running or an upstream down, `-32603` (internal error)
/// for everything else.
pub(crate) fn rpc_code(error: &AbilityError) -> i32 {
    match error.code() {
        code if code.is_validation() => -32602,
        Code::NotFoundAbility
        | Code::NotFoundResource
        | Code::NotFoundOperation
        | Code::SiteMismatch
        | Code::IdempotencyConflict => -32602,
        Code::PermissionDenied => -32001,
        Code::LimitExceeded
        | Code::IdempotencyInProgress
        | Code::IdempotencyOutcomeUnknown
        | Code::UpstreamUnavailable
        | Code::RateLimited => -32000,
        _ => -32603,
    }
}

/// Errors that travel as JSON-RPC errors.
pub(crate) trait ToRpc {
    /// This error as a JSON-RPC error ([`rpc_error`]).
    fn to_rpc(&self) -> ErrorData;
}

impl ToRpc for AbilityError {
    fn to_rpc(&self) -> ErrorData {
        rpc_error(self)
    }
}

/// `error` as a JSON-RPC error: [`rpc_code`], the message, and `data: {code, details?}`
/// (the upper-snake code travels in `data.code`).
pub(crate) fn rpc_error(error: &AbilityError) -> ErrorData {
    let mut data = serde_json::Map::new();
    data.insert("code".into(), Value::from(error.code().as_str()));
    if let Some(details) = error.details() {
        data.insert("details".into(), details.clone());
    }
    ErrorData::new(
        ErrorCode(rpc_code(error)),
        error.message().to_owned(),
        Some(Value::Object(data)),
    )
}

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
        "tasks/get" => reason::<GetTaskParams>(params),
        "tasks/update" => reason::<UpdateTaskParams>(params),
        "tasks/cancel" => reason::<CancelTaskParams>(params),
        "subscriptions/listen" => reason::<SubscriptionsListenRequestParams>(params),
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
