//! MCP-AQL operations carrying `params._idempotency_key`: at most once per caller and key,
//! their retries answered with the first outcome.

use serde_json::{Map, Value, json};

use super::call::{Refusal, confirmation_token, operation_once, resolve_params};
use super::{Endpoint, Table};
use crate::ledger::{Holder, Idempotent};
use crate::{AbilityError, Context, ErrorCode, Registry};

/// Run one `{operation, params}` request through `endpoint`. With `params._idempotency_key`
/// it runs at most once per caller and key: a retry gets the first outcome, a retry with
/// other parameters is refused. A refusal that asks for confirmation (or turns a token
/// down) frees the key, so the confirmed retry runs.
pub(super) async fn operation(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    holder: &Holder<'_>,
    request: &Map<String, Value>,
) -> Result<(Value, Vec<Value>), Refusal> {
    // The parameters the operation will run with (top-level keys merged in), so a retry
    // that differs anywhere is another call.
    let Ok(mut sent) = resolve_params(request, &mut Vec::new()) else {
        return operation_once(table, registry, endpoint, ctx, holder, request).await;
    };
    let Some(key) = sent.get("_idempotency_key").cloned() else {
        return operation_once(table, registry, endpoint, ctx, holder, request).await;
    };
    let name = request.get("operation").cloned().unwrap_or(Value::Null);
    confirmation_token(&mut sent);
    sent.retain(|k, _| !k.starts_with('_'));
    let what = json!(["mcp-aql", name, Value::Object(sent)]);
    let claim = match Idempotent::claim(holder, &key, "mcp-aql", &what).await {
        Ok(Idempotent::Run(claim)) => claim,
        Ok(Idempotent::Replay(outcome)) => return replayed(outcome),
        Err(error) => return Err((error, None)),
    };
    let outcome = Box::pin(operation_once(
        table, registry, endpoint, ctx, holder, request,
    ))
    .await;
    match &outcome {
        Ok((data, warnings)) => {
            let record = json!({"data": data, "warnings": warnings});
            Idempotent::settle(&claim, holder, &record).await;
        }
        Err((error, _)) if frees_key(error) => Idempotent::release(&claim, holder).await,
        Err((error, _)) => {
            let mut failed = json!({"code": error.code().as_str(), "message": error.message()});
            if let Some(details) = error.details() {
                failed["details"] = details.clone();
            }
            Idempotent::settle(&claim, holder, &json!({"error": failed})).await;
        }
    }
    outcome
}

/// Refusals that leave nothing to remember: the caller is meant to retry, confirmed, or
/// once the upstream that was down is back (a call never forwarded).
fn frees_key(error: &AbilityError) -> bool {
    match error.code() {
        ErrorCode::ConfirmationRequired
        | ErrorCode::TokenInvalid
        | ErrorCode::TokenExpired
        | ErrorCode::TokenAlreadyUsed
        | ErrorCode::TokenScopeMismatch
        | ErrorCode::LimitExceeded
        | ErrorCode::RateLimited => true,
        ErrorCode::UpstreamUnavailable => {
            error
                .details()
                .and_then(|d| d.get("forwarded"))
                .and_then(Value::as_bool)
                == Some(false)
        }
        _ => false,
    }
}

/// A recorded outcome, as the first call answered it.
#[allow(
    clippy::result_large_err,
    reason = "the refusal of `operation`, returned as is"
)]
fn replayed(outcome: Value) -> Result<(Value, Vec<Value>), Refusal> {
    if let Some(error) = outcome.get("error") {
        let text = |k: &str| {
            error
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let mut failed = AbilityError::new(
            ErrorCode::Custom(text("code").into()).canonical(),
            text("message"),
        );
        if let Some(details) = error.get("details") {
            failed = failed.with_details(details.clone());
        }
        return Err((failed, None));
    }
    let warnings = match outcome.get("warnings") {
        Some(Value::Array(warnings)) => warnings.clone(),
        _ => Vec::new(),
    };
    Ok((
        outcome.get("data").cloned().unwrap_or(Value::Null),
        warnings,
    ))
}
