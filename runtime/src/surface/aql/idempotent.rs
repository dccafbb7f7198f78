//! MCP-AQL operations carrying `params._idempotency_key`: at most once per caller and key,
//! their retries answered with the first outcome.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::envelope::Done;
use super::operation::operation_once;
use super::params::{Sent, confirmation_token};
use super::{Endpoint, Table};
use crate::context::{Attempt, HeldKey};
use crate::ledger::{Idempotent, Recorded};
use crate::surface::Served;
use crate::{AbilityError, Context, ErrorCode, Registry};

/// Run one `{operation, params}` request through `endpoint`. With an idempotency key
/// (`params._idempotency_key`, or one the call carried in `_meta`, which counts as the same)
/// it runs at most once per caller and key: a retry gets the first outcome, a retry with
/// other parameters is refused. A refusal before the operation's handler started (invalid
/// parameters, a confirmation to give, a token turned down, a limit) frees the key, so the
/// corrected or confirmed retry runs.
pub(super) async fn operation(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    served: &Served<'_>,
    request: &Map<String, Value>,
) -> Result<Done, AbilityError> {
    // Read once: the parameters the operation will run with (top-level keys merged in), so
    // a retry that differs anywhere is another call.
    let sent = Sent::read(request)?;
    // A key the call handed down from `_meta`: its refusals are the call's, not this
    // operation's.
    let handed = ctx
        .attempt()
        .filter(|a| matches!(a.key(), Some(HeldKey::Handed(_))));
    let own = sent.params.get("_idempotency_key").cloned();
    if own.is_some() && !served.guards.keeps_keys {
        return Err(crate::ledger::keys_not_kept("_idempotency_key"));
    }
    let Some(key) = key_of(own, ctx)? else {
        return operation_once(table, registry, endpoint, ctx, served, sent).await;
    };
    let mut bound = sent.params.clone();
    let takes = table.get(&sent.name).is_some_and(|op| op.confirms);
    confirmation_token(&mut bound, takes);
    bound.retain(|k, _| !k.starts_with('_'));
    let what = json!(["mcp-aql", sent.name, Value::Object(bound)]);
    let claim = match Idempotent::claim(&served.holder, &key, "mcp-aql", &what).await {
        Ok(Idempotent::Run(claim)) => claim,
        Ok(Idempotent::Replay(outcome)) => return replayed(outcome),
        Err(error) => {
            if let Some(attempt) = handed {
                attempt.refuse_key(error.clone());
            }
            return Err(error);
        }
    };
    // This operation's own record of whether its handler started.
    let part = Attempt::part_of(ctx.attempt());
    let ctx = ctx.clone().with_attempt(Arc::clone(&part));
    let outcome = Box::pin(operation_once(
        table, registry, endpoint, &ctx, served, sent,
    ))
    .await;
    remember(claim, &part, &outcome).await;
    outcome
}

/// The key an operation runs under, from its own (`own`, `params._idempotency_key`) and the
/// one its call holds: `None` when it runs as it is (no key, or the key its call claimed as
/// a whole: a batch's operations run under it).
fn key_of(own: Option<Value>, ctx: &Context) -> Result<Option<Value>, AbilityError> {
    match (own, ctx.attempt().and_then(|a| a.key())) {
        (None, None | Some(HeldKey::Claimed(_))) => Ok(None),
        (Some(own), Some(HeldKey::Claimed(call))) if own == *call => Ok(None),
        (Some(own), None | Some(HeldKey::Claimed(_))) => Ok(Some(own)),
        (None, Some(HeldKey::Handed(call))) => Ok(Some(call.clone())),
        (Some(own), Some(HeldKey::Handed(call))) if own == *call => Ok(Some(own)),
        (Some(own), Some(HeldKey::Handed(call))) => {
            let shown = |key: &Value| key.to_string().chars().take(80).collect::<String>();
            let refused = AbilityError::new(
                ErrorCode::ValidationInvalidValue,
                format!(
                    "The call carries two idempotency keys, {} in _meta and {} in \
                         params._idempotency_key: send one",
                    shown(call),
                    shown(&own)
                ),
            )
            .with_details(json!({"param_name": "_idempotency_key"}));
            if let Some(attempt) = ctx.attempt() {
                attempt.refuse_key(refused.clone());
            }
            Err(refused)
        }
    }
}

/// The operation's outcome under its key: recorded, or the key released when there is
/// nothing to remember.
async fn remember(
    claim: crate::ledger::Held,
    part: &Attempt,
    outcome: &Result<Done, AbilityError>,
) {
    match outcome {
        Ok(done) => {
            let record = Recorded::Operation {
                data: done.data.clone(),
                warnings: done.warnings.clone(),
            };
            Idempotent::settle(claim, &record).await;
        }
        // Refused before its handler started, never forwarded, or waiting for the client's
        // answer (the call runs again with it): nothing to remember.
        Err(error)
            if !part.started()
                || never_forwarded(error)
                || error.code() == &ErrorCode::InputRequired =>
        {
            Idempotent::release(claim).await;
        }
        Err(error) => {
            let record = Recorded::Failed(error.clone());
            Idempotent::settle(claim, &record).await;
        }
    }
}

/// A bridged call the upstream never received (it was down): nothing happened, though a
/// handler (the forwarder) started.
fn never_forwarded(error: &AbilityError) -> bool {
    error.code() == &ErrorCode::UpstreamUnavailable
        && error
            .details()
            .and_then(|d| d.get("forwarded"))
            .and_then(Value::as_bool)
            == Some(false)
}

/// A recorded outcome, as the first call answered it.
fn replayed(outcome: Recorded) -> Result<Done, AbilityError> {
    match outcome {
        Recorded::Operation { data, warnings } => Ok(Done { data, warnings }),
        Recorded::Failed(error) => Err(error),
        // Keys are bound to what they were used for: another surface's record is not this
        // operation's answer.
        Recorded::Complete(_) | Recorded::Task(_) | Recorded::Error(_) => Err(
            AbilityError::internal("the idempotency key was recorded for a tools/call"),
        ),
    }
}
