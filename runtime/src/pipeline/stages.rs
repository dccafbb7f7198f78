//! The core stages every call goes through, and the handler at the end.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use super::{Call, CallOutput, Stage};
use crate::ability::{CallFuture, Output, SITE_ID};
use crate::context::Watch;
use crate::normalize::{json_type, normalize, unwrap_input};
use crate::{Ability, AbilityError, Context, ErrorCode};

/// Names longer than this are cut in error messages.
const MAX_ECHOED_NAME: usize = 100;

/// The caller holds the ability's scope (reported to the HTTP gate, which answers a lacking
/// scope with `403`).
pub(crate) struct Permission;

impl Stage for Permission {
    #[inline]
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        let permitted = permission(call.ability, &call.ctx);
        if let Some(report) = call.report {
            report.permission(match &permitted {
                Ok(()) => Ok(()),
                Err(_) => Err(call.ability.permission().unwrap_or_default()),
            });
        }
        permitted
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
            crate::validate::check(validator, &args, ability.sensitive())?;
        }
        call.input = unwrap_input(&ability.input_shape, args);
        Ok(())
    }
}

/// Run the handler (panic-safe, time-limited, cancellable) and keep its output bare. The
/// handler is called now; the future that comes back drives what it returned.
pub(crate) fn handle(ability: &Ability, ctx: Context, input: Value) -> Handling<'_> {
    if let Some(attempt) = ctx.attempt() {
        attempt.start();
    }
    let watch = ctx.watch();
    let timeout = ctx.timeout();
    let handler = &*ability.handler;
    let state = match std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(ctx, input))) {
        Ok(future) => State::First {
            guarded: AssertUnwindSafe(future).catch_unwind(),
            watch,
            timeout,
        },
        Err(panic) => State::Done(Some(Err(panic))),
    };
    Handling { ability, state }
}

/// What a handler's future came to: its result, or the panic it raised.
type Outcome = Result<Result<Output, AbilityError>, Box<dyn Any + Send>>;

/// A running handler: see [`handle`].
pub(crate) struct Handling<'a> {
    ability: &'a Ability,
    state: State<'a>,
}

enum State<'a> {
    /// Not polled yet. Most handlers finish on their first poll: those need no timer and
    /// no watch for the caller's cancellation, which stay out of the way until one waits.
    First {
        guarded: futures_util::future::CatchUnwind<AssertUnwindSafe<CallFuture>>,
        watch: Watch,
        timeout: Option<std::time::Duration>,
    },
    /// The handler waits, under its time limit and the caller's cancellation.
    Waiting(Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>),
    /// The outcome, until it is taken (the handler panicked making its future).
    Done(Option<Outcome>),
}

impl Future for Handling<'_> {
    type Output = Result<CallOutput, AbilityError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let ability = this.ability;
        loop {
            match std::mem::replace(&mut this.state, State::Done(None)) {
                State::First {
                    mut guarded,
                    watch,
                    timeout,
                } => match guarded.poll_unpin(cx) {
                    Poll::Ready(outcome) => return Poll::Ready(output(ability, outcome)),
                    Poll::Pending => {
                        let token = watch.token().clone();
                        this.state =
                            State::Waiting(Box::pin(wait(ability, guarded, timeout, token)));
                    }
                },
                State::Waiting(mut waiting) => {
                    return match waiting.as_mut().poll(cx) {
                        Poll::Ready(outcome) => Poll::Ready(output(ability, outcome)),
                        Poll::Pending => {
                            this.state = State::Waiting(waiting);
                            Poll::Pending
                        }
                    };
                }
                State::Done(Some(outcome)) => return Poll::Ready(output(ability, outcome)),
                State::Done(None) => {
                    return Poll::Ready(Err(AbilityError::internal(
                        "a finished call was polled again",
                    )));
                }
            }
        }
    }
}

/// The handler's outcome as the call's output: a panic logged and turned into
/// `INTERNAL_ERROR`, the value kept bare with whether the wire wraps it.
fn output(ability: &Ability, outcome: Outcome) -> Result<CallOutput, AbilityError> {
    let Output {
        structured,
        content,
        prompt,
    } = finish(ability, outcome)?;
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

/// A handler that did not finish at once, under its time limit and the caller's cancellation.
async fn wait(
    ability: &Ability,
    guarded: impl Future<Output = Outcome>,
    timeout: Option<std::time::Duration>,
    cancellation: tokio_util::sync::CancellationToken,
) -> Outcome {
    let limited = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, guarded)
                .await
                .unwrap_or_else(|_| Ok(Err(timed_out(ability, limit)))),
            None => guarded.await,
        }
    };
    tokio::select! {
        outcome = limited => outcome,
        () = cancellation.cancelled() => Ok(Err(cancelled(ability))),
    }
}

/// A call running inside its middleware (`middleware::Running`).
type Running = Pin<Box<dyn Future<Output = Result<CallOutput, AbilityError>> + Send>>;

/// The middleware's `around`s and the handler inside them, under the call's time limit and
/// the caller's cancellation (a call waiting in a middleware, for a permit, is bounded too).
pub(crate) fn bounded(
    ability: Arc<Ability>,
    running: Running,
    timeout: Option<std::time::Duration>,
    cancellation: tokio_util::sync::CancellationToken,
) -> Running {
    Box::pin(async move {
        let limited = async {
            match timeout {
                Some(limit) => tokio::time::timeout(limit, running)
                    .await
                    .unwrap_or_else(|_| Err(timed_out(&ability, limit))),
                None => running.await,
            }
        };
        tokio::select! {
            outcome = limited => outcome,
            () = cancellation.cancelled() => Err(cancelled(&ability)),
        }
    })
}

fn timed_out(ability: &Ability, limit: std::time::Duration) -> AbilityError {
    AbilityError::new(
        ErrorCode::Timeout,
        format!(
            "'{}' did not finish within {} ms",
            ability.name(),
            limit.as_millis()
        ),
    )
}

fn cancelled(ability: &Ability) -> AbilityError {
    AbilityError::new(
        ErrorCode::Cancelled,
        format!("'{}' was cancelled by the caller", ability.name()),
    )
}

/// `value` as the output of `ability`'s handler would be (wrapped on the wire where the
/// output schema says so): what a middleware answers in the handler's place.
pub(crate) fn structured(ability: &Ability, value: Value) -> Result<CallOutput, AbilityError> {
    let wrap = wraps(ability, &value)?;
    Ok(CallOutput::new(Some(value), wrap, None, None))
}

/// A handler's outcome, with a panic logged and turned into `INTERNAL_ERROR`.
fn finish(ability: &Ability, outcome: Outcome) -> Result<Output, AbilityError> {
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

/// What a panic in a middleware comes to: logged, and `INTERNAL_ERROR` for the call.
pub(crate) fn middleware_panicked(name: &str, panic: &(dyn Any + Send)) -> AbilityError {
    tracing::error!(
        middleware = name,
        panic = panic_message(panic),
        "middleware panicked"
    );
    AbilityError::internal("the call failed unexpectedly")
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string panic payload)")
}
