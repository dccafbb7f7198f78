//! The call pipeline: one [`Call`] through ordered [`Stage`]s, then the handler.
//!
//! ```text
//! [audit: watches from here to the outcome]
//! permission -> rate -> site -> [surface: arguments] -> input (normalize, validate, unwrap)
//!            -> [surface: gate] -> handler (panic-safe, cancellable, time-limited)
//!            -> [what stages left for the output, last first] -> output (the bare value kept,
//!               with the stages' warnings)
//! ```
//!
//! A stage is a small value with one job. The core stages run for every call; a surface adds
//! its own at the two places it may (MCP-AQL: unknown parameters, UPDATE fields and collection
//! queries among the arguments, the confirmation gate before the handler). The server's
//! [`Guards`] add two: the rate limit, right after the permission check (a call refused later,
//! for its arguments, still counts), and the audit trail, which watches the call from before
//! its first check and records one event however it ends. [`order`] chooses a call's stages,
//! for every surface; surfaces only map the wire to a call and the output back.

mod audit;
mod output;
pub(crate) mod rate;
mod report;
mod stages;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

#[cfg(feature = "aql")]
pub(crate) use crate::warning::{Severity, Warning};
pub use output::CallOutput;
pub(crate) use report::{Reporter, report};

use crate::audit::Audit;
use crate::error::Lookup;
use crate::normalize::into_object;
use crate::{Ability, AbilityError, Context, Registry};
use rate::RateLimits;

/// One call of one ability, as it goes through the stages.
pub(crate) struct Call<'a> {
    pub(crate) ability: &'a Ability,
    pub(crate) ctx: Context,
    /// The arguments object; stages before the input stage may take keys out or rewrite it.
    pub(crate) args: Map<String, Value>,
    /// What the handler gets: set by the input stage.
    pub(crate) input: Value,
    /// Where the call reports what the HTTP gate needs to know.
    pub(crate) report: Option<&'a Reporter>,
    /// What stages left to do to the output, each with what it needs (run last first).
    finish: Finishes<'a>,
}

/// Work a stage leaves for the output, after the handler: it owns what it needs, and hands
/// back what it learns in the output (a collection query's page and its warnings).
pub(crate) type Finish<'a> = Box<dyn FnOnce(&mut CallOutput) + Send + 'a>;

/// A call's finishing work: boxed, as most calls have none and a call moves through futures.
#[allow(
    clippy::box_collection,
    reason = "one pointer, not three, in a value every call moves"
)]
type Finishes<'a> = Option<Box<Vec<Finish<'a>>>>;

impl<'a> Call<'a> {
    /// Have `finish` change the output once the handler has returned it.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn then(&mut self, finish: impl FnOnce(&mut CallOutput) + Send + 'a) {
        self.finish.get_or_insert_default().push(Box::new(finish));
    }
}

/// What a server puts around every call: its rate limits, its audit trail and, when it
/// counts them, its metrics.
pub(crate) struct Guards {
    pub(crate) rates: RateLimits,
    pub(crate) audit: Audit,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<Arc<crate::metrics::Metrics>>,
    #[cfg(feature = "otel")]
    pub(crate) tracing: Option<Arc<crate::otel::Tracing>>,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guards").finish_non_exhaustive()
    }
}

/// What a server puts around one call: its guards, and where to report what the call
/// learned (for the HTTP gate's status codes).
#[derive(Clone, Copy, Default)]
pub(crate) struct Around<'a> {
    pub(crate) guards: Option<&'a Arc<Guards>>,
    pub(crate) report: Option<&'a Reporter>,
}

impl<'a> Around<'a> {
    /// Inside `guards`, reporting nothing.
    pub(crate) fn guarded(guards: &'a Arc<Guards>) -> Self {
        Self {
            guards: Some(guards),
            report: None,
        }
    }
}

/// Where a surface's stage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Among the arguments as sent, after the permission and site checks, before the input
    /// is normalized and validated.
    Arguments,
    /// After validation, just before the handler: gates that act on a valid call.
    Gate,
}

/// The future of a stage that waits (asking the user, a store).
pub(crate) type StageFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(), AbilityError>> + Send + 'a>>;

/// One step of a call. Every method has a default that does nothing, so a stage implements
/// only what its job needs.
pub(crate) trait Stage: Send + Sync {
    /// Where the stage runs (surface stages; the core stages have their own places).
    fn place(&self) -> Place {
        Place::Arguments
    }

    /// Check or change the call; an error refuses it and no later stage runs. What the stage
    /// leaves for the output ([`Call::then`]) may borrow from it.
    fn check<'s>(&'s self, _call: &mut Call<'s>) -> Result<(), AbilityError> {
        Ok(())
    }

    /// Whether the stage may wait ([`wait`](Self::wait) returns work): the pipeline runs it,
    /// and those after it, in an async continuation. A stage that implements `wait` says so.
    fn waits(&self) -> bool {
        false
    }

    /// Work that waits, after `check`; `None` when there is nothing to wait for. Called only
    /// for a stage that [`waits`](Self::waits).
    fn wait<'a>(&'a self, _call: &'a Call<'_>) -> Option<StageFuture<'a>> {
        None
    }

    /// Watch the call from before its first check to its outcome (the audit event): what
    /// this returns hears how the call ended, whichever stage refused it. `None`: the stage
    /// does not watch this call.
    fn watch<'a>(
        &'a self,
        _ability: &Ability,
        _ctx: &Context,
        _args: &Value,
    ) -> Option<Settle<'a>> {
        None
    }
}

/// What hears a watched call's outcome (`Ok` when it produced an output).
pub(crate) type Settle<'a> = Box<dyn FnOnce(Result<(), &AbilityError>) + Send + 'a>;

/// Run `ability` with wire `args` through the stages of [`order`] and then its handler.
///
/// The stages that only check run at once, when the future is made (a pipeline future is
/// always awaited where it is made): with none that waits (native tools, meta,
/// `Ability::call`), the future keeps only the running handler, and a call's context and
/// arguments are not carried through every level of it. From the first stage that may wait
/// (a rate kept in the shared store, MCP-AQL's confirmation gate) the rest run in an async
/// continuation.
pub(crate) fn run<'a>(
    ability: &'a Ability,
    ctx: Context,
    args: Value,
    around: Around<'a>,
    surface: &'a [&'a dyn Stage],
) -> impl Future<Output = Result<CallOutput, AbilityError>> + Send + 'a {
    // The stages that watch the whole call (the server's audit trail) look first.
    let watching = around
        .guards
        .and_then(|guards| (&guards.audit as &dyn Stage).watch(ability, &ctx, &args));
    #[cfg(feature = "metrics")]
    let timer = around
        .guards
        .and_then(|guards| guards.metrics.as_deref())
        .map(|metrics| metrics.start(&ability.metered, ability.name(), ctx.via()));
    #[cfg(feature = "otel")]
    let traced = around
        .guards
        .and_then(|guards| guards.tracing.as_deref())
        .map(|tracing| {
            tracing.call(crate::otel::CallSpan {
                ability: ability.name(),
                tool: ability.is_tool().then(|| ability.tool_name()),
                surface: ctx.via(),
                semantic: ability.semantic().as_str(),
                principal: ctx.caller().principal(),
                args: match &args {
                    Value::Object(map) if tracing.records_arguments() => Some(
                        ability
                            .redacted(map)
                            .map_or(std::borrow::Cow::Borrowed(map), std::borrow::Cow::Owned),
                    ),
                    _ => None,
                },
                declared: ability
                    .tool_input_schema()
                    .get("properties")
                    .and_then(Value::as_object),
            })
        });
    let start = start(ability, ctx, args, around, surface);
    async move {
        let work = async {
            let (handler, finish) = match start {
                Start::Handler(handler, finish) => (handler, finish),
                Start::Waiting(call, done) => {
                    let rest = order(around, call.ctx.continues(), surface).skip(done);
                    Box::pin(waiting(call, rest)).await?
                }
                Start::Refused(error) => return Err(error),
            };
            let mut output = handler.await?;
            if let Some(finish) = finish {
                for finish in finish.into_iter().rev() {
                    finish(&mut output);
                }
            }
            Ok(output)
        };
        #[cfg(feature = "otel")]
        let work = crate::otel::within(traced.as_ref(), work);
        let outcome = work.await;
        #[cfg(feature = "otel")]
        if let Some(cx) = &traced {
            crate::otel::end(
                cx,
                outcome.as_ref().map(drop).map_err(|e| e.code().as_str()),
            );
        }
        if let Some(settle) = watching {
            settle(outcome.as_ref().map(drop));
        }
        #[cfg(feature = "metrics")]
        if let Some(timer) = timer {
            timer.finish(outcome.as_ref().map(drop).map_err(AbilityError::code));
        }
        outcome
    }
}

/// Where a call stands once the stages that only check have run.
enum Start<'a> {
    /// Every stage passed: the handler is running, and what the stages left for its output.
    Handler(stages::Handling<'a>, Finishes<'a>),
    /// The stage after the first `done` of [`order`] may wait: it and the rest are next.
    Waiting(Call<'a>, usize),
    Refused(AbilityError),
}

/// The stages of a call after the permission check, in order, for every surface: the rate
/// (unless the call goes on with one already counted), the site, the surface's argument
/// stages, the input, the surface's gate stages. (The permission check runs first, before the
/// arguments are read; the audit event wraps the whole call.)
fn order<'s>(
    around: Around<'s>,
    continues: bool,
    surface: &'s [&'s dyn Stage],
) -> impl Iterator<Item = &'s dyn Stage> + 's {
    const SITE: &dyn Stage = &stages::SiteCheck;
    const INPUT: &dyn Stage = &stages::Input;
    let rate = around
        .guards
        .filter(|_| !continues)
        .map(|guards| &guards.rates as &dyn Stage);
    let at = move |place| surface.iter().copied().filter(move |s| s.place() == place);
    rate.into_iter()
        .chain([SITE])
        .chain(at(Place::Arguments))
        .chain([INPUT])
        .chain(at(Place::Gate))
}

fn start<'a>(
    ability: &'a Ability,
    ctx: Context,
    args: Value,
    around: Around<'a>,
    surface: &'a [&'a dyn Stage],
) -> Start<'a> {
    let mut call = Call {
        ability,
        ctx,
        args: Map::new(),
        input: Value::Null,
        report: around.report,
        finish: None,
    };
    // Permission first: nothing about the input is revealed to a caller without the scope.
    if let Err(error) = Stage::check(&stages::Permission, &mut call) {
        return Start::Refused(error);
    }
    call.args = match into_object(args) {
        Ok(args) => args,
        Err(error) => return Start::Refused(error),
    };
    for (done, stage) in order(around, call.ctx.continues(), surface).enumerate() {
        if stage.waits() {
            return Start::Waiting(call, done);
        }
        if let Err(error) = stage.check(&mut call) {
            return Start::Refused(error);
        }
    }
    let Call {
        ability,
        ctx,
        input,
        finish,
        ..
    } = call;
    Start::Handler(stages::handle(ability, ctx, input), finish)
}

/// The stages from the first that may wait to the last, then the handler.
async fn waiting<'a>(
    mut call: Call<'a>,
    rest: impl Iterator<Item = &'a dyn Stage>,
) -> Result<(stages::Handling<'a>, Finishes<'a>), AbilityError> {
    for stage in rest {
        stage.check(&mut call)?;
        if let Some(waiting) = stage.wait(&call) {
            waiting.await?;
        }
    }
    let Call {
        ability,
        ctx,
        input,
        finish,
        ..
    } = call;
    Ok((stages::handle(ability, ctx, input), finish))
}

impl Registry {
    /// Call the ability named `name` (ability name or tool name) with wire `args` (`null` for
    /// none), returning the wire result: always a JSON object, the output wrapped under
    /// `result` where its schema is not an object.
    ///
    /// Errors carry an upper-snake [`ErrorCode`](crate::ErrorCode): `NOT_FOUND_ABILITY`,
    /// `PERMISSION_DENIED`, `VALIDATION_*`, the handler's own, or `INTERNAL_ERROR` when the
    /// handler panics.
    pub async fn call(&self, ctx: Context, name: &str, args: Value) -> Result<Value, AbilityError> {
        let Some(ability) = self.get(name) else {
            return Err(AbilityError::unknown(Lookup::Ability, name));
        };
        ability.call(ctx, args).await
    }
}

impl Ability {
    /// Run the whole pipeline for this ability and return the structured result (`{}` for
    /// content-only results). See [`Registry::call`].
    pub async fn call(&self, ctx: Context, args: Value) -> Result<Value, AbilityError> {
        let output = self.call_output(ctx, args).await?;
        Ok(output
            .into_wire()
            .0
            .unwrap_or_else(|| Value::Object(Map::new())))
    }

    /// Run the whole pipeline for this ability and return everything it produced.
    pub async fn call_output(&self, ctx: Context, args: Value) -> Result<CallOutput, AbilityError> {
        run(self, ctx, args, Around::default(), &[]).await
    }

    /// The same, inside a server's rate limits and audit trail.
    pub(crate) async fn call_guarded(
        &self,
        ctx: Context,
        args: Value,
        guards: &Arc<Guards>,
    ) -> Result<CallOutput, AbilityError> {
        run(self, ctx, args, Around::guarded(guards), &[]).await
    }

    /// `PERMISSION_DENIED` unless the caller holds the ability's scope: the permission stage,
    /// and what surfaces that act outside a call (completion) check with the same words.
    pub(crate) fn check_permission(&self, ctx: &Context) -> Result<(), AbilityError> {
        stages::permission(self, ctx)
    }
}
