//! The core stages every call goes through, and the handler at the end.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use super::{Call, CallOutput, Stage};
use crate::ability::{Output, SITE_ID};
use crate::normalize::{json_type, normalize, unwrap_input};
use crate::{Ability, AbilityError, Context, ErrorCode};

/// Names longer than this are cut in error messages.
const MAX_ECHOED_NAME: usize = 100;

/// The caller holds the ability's scope.
pub(crate) struct Permission;

impl Stage for Permission {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        permission(call.ability, &call.ctx)
    }
}

pub(crate) fn permission(ability: &Ability, ctx: &Context) -> Result<(), AbilityError> {
    match ability.permission() {
        Some(scope) if !ctx.caller().has_scope(scope) => Err(AbilityError::permission_denied(
            format!("'{}' requires the scope '{scope}'", ability.name()),
        )
        .with_details(json!({ "required_scope": scope }))),
        _ => Ok(()),
    }
}

/// `site_id` taken out of the arguments, and refused if it names another site. An ability
/// with `site = false`, or whose own input has a `site_id`, leaves it alone.
pub(crate) struct SiteCheck;

impl Stage for SiteCheck {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        if !call.ability.takes_site_id() {
            return Ok(());
        }
        let expected = call.ctx.site().map(crate::Site::site_id);
        check_site(expected, call.args.remove(SITE_ID))
    }
}

fn check_site(expected: Option<&str>, given: Option<Value>) -> Result<(), AbilityError> {
    match given {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(given)) => match expected {
            Some(expected) if expected != given => {
                let given: String = given.chars().take(MAX_ECHOED_NAME).collect();
                Err(AbilityError::new(
                    ErrorCode::SiteMismatch,
                    format!("this server serves site '{expected}', not '{given}'"),
                )
                .with_details(json!({ "expected_site_id": expected, "site_id": given })))
            }
            _ => Ok(()),
        },
        Some(other) => Err(AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!(
                "parameter 'site_id' must be string, got {}",
                json_type(&other)
            ),
        )),
    }
}

/// The arguments normalized (defaults, the `input` key), validated against the schema with
/// every violation reported, and unwrapped into what the handler gets.
pub(crate) struct Input;

impl Stage for Input {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        let ability = call.ability;
        let args = normalize(&ability.input_shape, std::mem::take(&mut call.args));
        if let Some(validator) = &ability.validator {
            crate::validate::check(validator, &args)?;
        }
        call.input = unwrap_input(&ability.input_shape, args);
        Ok(())
    }
}

/// Run the handler (panic-safe, time-limited, cancellable) and keep its output bare.
pub(crate) async fn handle(
    ability: &Ability,
    ctx: Context,
    input: Value,
) -> Result<CallOutput, AbilityError> {
    let Output {
        structured,
        content,
        prompt,
    } = run_handler(ability, ctx, input).await?;
    Ok(match structured {
        Some(value) => {
            let wrap = wraps(ability, &value)?;
            CallOutput::new(Some(value), wrap, content, prompt)
        }
        // `()` returns.
        None if content.is_none() => {
            CallOutput::new(Some(Value::Object(Map::new())), false, None, prompt)
        }
        None => CallOutput::new(None, false, content, prompt),
    })
}

/// Whether the wire wraps `output` under `result`; an error when an object output schema
/// gets a non-object.
fn wraps(ability: &Ability, output: &Value) -> Result<bool, AbilityError> {
    // Without a declared output schema (abilities built at run time), a non-object is
    // wrapped all the same: structured content is always an object.
    if ability.output_wrapped() || (ability.output_schema().is_none() && !output.is_object()) {
        return Ok(true);
    }
    if output.is_object() {
        return Ok(false);
    }
    tracing::error!(
        ability = ability.name(),
        got = json_type(output),
        "ability returned a non-object for an object output schema"
    );
    Err(AbilityError::internal(format!(
        "'{}' returned a value its output schema does not allow",
        ability.name()
    )))
}

async fn run_handler(
    ability: &Ability,
    ctx: Context,
    input: Value,
) -> Result<Output, AbilityError> {
    let handler = &*ability.handler;
    let watch = ctx.watch();
    let timeout = ctx.timeout();
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(ctx, input))) {
        Ok(future) => future,
        Err(panic) => return finish(ability, Err(panic)),
    };
    let mut guarded = AssertUnwindSafe(future).catch_unwind();
    // Most handlers finish on their first poll: those need no timer and no watch for the
    // caller's cancellation, and the waiting machinery below stays out of this future.
    if let Poll::Ready(outcome) = futures_util::poll!(&mut guarded) {
        return finish(ability, outcome);
    }
    let outcome = Box::pin(wait(ability, guarded, timeout, watch.token().clone())).await;
    finish(ability, outcome)
}

/// A handler that did not finish at once, under its time limit and the caller's cancellation.
async fn wait(
    ability: &Ability,
    guarded: impl Future<Output = Result<Result<Output, AbilityError>, Box<dyn Any + Send>>>,
    timeout: Option<std::time::Duration>,
    cancellation: tokio_util::sync::CancellationToken,
) -> Result<Result<Output, AbilityError>, Box<dyn Any + Send>> {
    let limited = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, guarded)
                .await
                .unwrap_or_else(|_| {
                    Ok(Err(AbilityError::new(
                        ErrorCode::Timeout,
                        format!(
                            "'{}' did not finish within {} ms",
                            ability.name(),
                            limit.as_millis()
                        ),
                    )))
                }),
            None => guarded.await,
        }
    };
    tokio::select! {
        outcome = limited => outcome,
        () = cancellation.cancelled() => Ok(Err(AbilityError::new(
            ErrorCode::Cancelled,
            format!("'{}' was cancelled by the caller", ability.name()),
        ))),
    }
}

/// A handler's outcome, with a panic logged and turned into `INTERNAL_ERROR`.
fn finish(
    ability: &Ability,
    outcome: Result<Result<Output, AbilityError>, Box<dyn Any + Send>>,
) -> Result<Output, AbilityError> {
    outcome.unwrap_or_else(|panic| {
        tracing::error!(
            ability = ability.name(),
            panic = panic_message(&*panic),
            "ability panicked"
        );
        Err(AbilityError::internal(format!(
            "'{}' failed unexpectedly",
            ability.name()
        )))
    })
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string panic payload)")
}
