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
//! its first check and records one event however it ends. [`Order`](order::Order) chooses a call's stages,
//! for every surface; surfaces only map the wire to a call and the output back.

mod audit;
mod confirm;
#[cfg(feature = "tower")]
mod layered;
mod metered;
pub mod middleware;
mod order;
mod output;
pub(crate) mod rate;
mod report;
mod running;
mod stages;
mod traced;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

#[cfg(feature = "aql")]
pub(crate) use crate::warning::{Severity, Warning};
pub(crate) use confirm::{Confirm, TOKEN_ARGUMENT};
#[cfg(feature = "aql")]
pub(crate) use confirm::{Policy, Retry};
pub use output::CallOutput;
pub(crate) use report::{Reading, Reporter, report};
pub(crate) use running::Running;

use crate::audit::Audit;
use crate::error::Lookup;
use crate::normalize::into_object;
use crate::{Ability, AbilityError, Context, Registry};
use middleware::{Builtin, Chain, Link, Middleware};
use order::Order;
use rate::RateLimits;

/// One call of one ability, as it goes through the stages.
pub(crate) struct Call<'a> {
    pub(crate) ability: &'a Ability,
    pub(crate) ctx: Context,
    /// The arguments object; stages before the input stage may take keys out or rewrite it.
    pub(crate) args: Map<String, Value>,
    /// `input` holds the arguments as sent, until the first stage that reads them makes
    /// them `args`.
    unread: bool,
    /// What the handler gets: set by the input stage (until then, see `unread`).
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
    /// The chain's links that check among the arguments as sent, in order.
    arguments: Box<[Link]>,
    /// The chain's links that check among the validated arguments, in order.
    validated: Box<[Link]>,
    /// The chain's links that may watch, in order.
    watches: Box<[Link]>,
    /// Whether the chain keeps idempotency keys (it has the `idempotency` link).
    pub(crate) keeps_keys: bool,
    /// Whether the chain confirms the calls that must be confirmed (it has the
    /// `confirmation` link).
    pub(crate) confirms: bool,
    /// The metrics link's stage, when the server counts calls.
    metered: Option<Arc<dyn Stage>>,
    /// The traces link's stage, when the server traces calls.
    traced: Option<Arc<dyn Stage>>,
    /// The middleware among the links, for their `around`s (empty: the handler runs bare).
    users: Arc<[Arc<dyn Middleware>]>,
    /// The metrics and the tracer, for what the gate counts (confirmation tokens) and the
    /// adapter traces (a request's span).
    pub(crate) instruments: crate::instruments::Instruments,
}

impl std::fmt::Debug for Guards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guards").finish_non_exhaustive()
    }
}

impl Guards {
    /// A server's guards, running the links of `chain`, counting and tracing calls with
    /// `instruments`.
    pub(crate) fn new(
        rates: RateLimits,
        audit: Audit,
        chain: &Chain,
        instruments: crate::instruments::Instruments,
    ) -> Self {
        let watches = chain
            .links
            .iter()
            .filter(|link| {
                matches!(
                    link,
                    Link::Builtin(Builtin::Traces | Builtin::Metrics | Builtin::Audit)
                        | Link::User(_)
                )
            })
            .cloned()
            .collect();
        // A middleware's place is read once, here.
        let at = |place| {
            chain
                .links
                .iter()
                .filter(|link| match link {
                    // They only watch; idempotency stands outside the call.
                    Link::Builtin(
                        Builtin::Audit | Builtin::Traces | Builtin::Metrics | Builtin::Idempotency,
                    ) => false,
                    // Where the surface's gates run.
                    Link::Builtin(Builtin::Confirmation) => place == Place::Validated,
                    Link::Builtin(_) => place == Place::Arguments,
                    Link::User(middleware) => Stage::place(middleware) == place,
                })
                .cloned()
                .collect()
        };
        Self {
            rates,
            audit,
            arguments: at(Place::Arguments),
            validated: at(Place::Validated),
            watches,
            keeps_keys: chain
                .links
                .iter()
                .any(|link| matches!(link, Link::Builtin(Builtin::Idempotency))),
            confirms: chain
                .links
                .iter()
                .any(|link| matches!(link, Link::Builtin(Builtin::Confirmation))),
            users: chain.users(),
            metered: metered::stage(&instruments),
            traced: traced::stage(&instruments),
            instruments,
        }
    }
}

/// What a server puts around one call: its guards, and where to report what the call
/// learned (for the HTTP gate's status codes).
#[derive(Clone, Copy, Default)]
pub(crate) struct Around<'a> {
    pub(crate) guards: Option<&'a Arc<Guards>>,
    pub(crate) report: Option<&'a Reporter>,
    /// The ability called, shared: what a middleware's `around` owns.
    pub(crate) shared: Option<&'a Arc<Ability>>,
}

impl<'a> Around<'a> {
    /// A call of `ability` inside `guards`, reporting to `report`.
    pub(crate) fn new(
        guards: &'a Arc<Guards>,
        report: Option<&'a Reporter>,
        ability: &'a Arc<Ability>,
    ) -> Self {
        Self {
            guards: Some(guards),
            report,
            shared: Some(ability),
        }
    }

    /// Inside `guards`, reporting nothing.
    pub(crate) fn guarded(guards: &'a Arc<Guards>, ability: &'a Arc<Ability>) -> Self {
        Self::new(guards, None, ability)
    }

    /// What hears how `ability`'s call ends (the chain's links that watch it, one after the
    /// other), and what the rest of the call runs inside (the traces link's span).
    fn watchers(
        self,
        ability: &'a Ability,
        ctx: &Context,
        args: &Value,
    ) -> (Option<Settle<'a>>, Option<Enclose<'a>>) {
        let Some(guards) = self.guards else {
            return (None, None);
        };
        let mut enclosing = None;
        let mut watching = guards
            .watches
            .iter()
            .filter_map(|link| order::step(link, Some(guards), ability, false))
            .filter_map(|(stage, _)| match stage.enclose(ability, ctx, args) {
                Some((settle, enclose)) => {
                    enclosing.get_or_insert(enclose);
                    Some(settle)
                }
                None => stage.watch(ability, ctx, args),
            });
        (Self::one(&mut watching), enclosing)
    }

    /// The settles of `watching` as one.
    fn one(watching: &mut impl Iterator<Item = Settle<'a>>) -> Option<Settle<'a>> {
        let first = watching.next()?;
        let rest: Vec<Settle<'a>> = watching.collect();
        if rest.is_empty() {
            return Some(first);
        }
        Some(Box::new(move |outcome| {
            first(outcome);
            for settle in rest {
                settle(outcome);
            }
        }))
    }

    /// The handler of `ability`'s call, inside the `around`s of the chain's middleware.
    fn handler(self, ability: &'a Ability, ctx: Context, input: Value) -> Handler<'a> {
        let Some(guards) = self.guards.filter(|guards| !guards.users.is_empty()) else {
            return Handler::Bare(stages::handle(ability, ctx, input));
        };
        // Never the handler without the `around`s it is meant to run inside.
        let Some(shared) = self.shared else {
            let error = AbilityError::internal("the call could not be run inside its middleware");
            return Handler::Wrapped(Box::pin(std::future::ready(Err(error))));
        };
        let (timeout, cancellation) = (ctx.timeout(), ctx.watch().token().clone());
        let next = middleware::Next {
            links: Arc::clone(&guards.users),
            at: 0,
        };
        let running = next.run(middleware::Invocation {
            ability: Arc::clone(shared),
            ctx,
            input,
        });
        Handler::Wrapped(stages::bounded(
            Arc::clone(shared),
            running,
            timeout,
            cancellation,
        ))
    }
}

/// A call's handler, running: bare, or inside the middleware's `around`s.
enum Handler<'a> {
    Bare(stages::Handling<'a>),
    Wrapped(middleware::Running),
}

impl Future for Handler<'_> {
    type Output = Result<CallOutput, AbilityError>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Self::Bare(handling) => Pin::new(handling).poll(cx),
            Self::Wrapped(running) => running.as_mut().poll(cx),
        }
    }
}

/// Where a stage runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Among the arguments as sent, after the permission and site checks, before the input
    /// is normalized and validated.
    Arguments,
    /// Among the validated arguments: the middleware's checks, before the gates.
    Validated,
    /// After validation, just before the handler: gates that act on a valid call.
    Gate,
}

/// The future of a stage that waits (asking the user, a store).
pub(crate) type StageFuture<'a> =
    Pin<Box<dyn Future<Output = Result<(), AbilityError>> + Send + 'a>>;

/// One step of a call. Every method has a default that does nothing, so a stage implements
/// only what its job needs.
pub(crate) trait Stage: Send + Sync {
    /// Where the stage runs.
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
        _ability: &'a Ability,
        _ctx: &Context,
        _args: &Value,
    ) -> Option<Settle<'a>> {
        None
    }

    /// Like [`watch`](Self::watch), and run the rest of the call inside what the stage opened
    /// for it (the traces link's span, so the spans of the work below are its children).
    fn enclose<'a>(
        &'a self,
        _ability: &'a Ability,
        _ctx: &Context,
        _args: &Value,
    ) -> Option<(Settle<'a>, Enclose<'a>)> {
        None
    }
}

/// The rest of a call, as an enclosing stage gets it to run (in place: it is not moved).
pub(crate) type Work<'w> =
    Pin<&'w mut (dyn Future<Output = Result<CallOutput, AbilityError>> + Send)>;

/// What runs the rest of a call inside what a stage opened for it.
pub(crate) type Enclose<'a> = Box<
    dyn for<'w> FnOnce(
            Work<'w>,
        ) -> Pin<
            Box<dyn Future<Output = Result<CallOutput, AbilityError>> + Send + 'w>,
        > + Send
        + 'a,
>;

/// What hears a watched call's outcome.
pub(crate) type Settle<'a> = Box<dyn FnOnce(Result<&CallOutput, &AbilityError>) + Send + 'a>;

/// Run `ability` with wire `args` through the stages of [`Order`](order::Order) and then its handler
/// (inside the `around`s of the chain's middleware).
///
/// The stages that only check run at once, when the future is made (a pipeline future is
/// always awaited where it is made): with none that waits (native tools, meta,
/// `Ability::call`) and nothing enclosing the call, the future is the running handler and
/// what hears its outcome, small and moved cheaply, and a call's context and arguments are
/// not carried through every level of it. From the first stage that may wait (a rate kept
/// in the shared store, MCP-AQL's confirmation gate), or inside a span, the rest run in one
/// boxed continuation.
pub(crate) fn run<'a>(
    ability: &'a Ability,
    ctx: Context,
    args: Value,
    around: Around<'a>,
    surface: &'a [&'a dyn Stage],
) -> Running<'a> {
    // The links that watch the whole call (the server's audit trail) look first.
    let (watching, enclosing) = around.watchers(ability, &ctx, &args);
    let start = start(ability, ctx, args, around, surface);
    let state = match (start, enclosing) {
        // The common call: the handler runs in this future, nothing around it.
        (Start::Handler(handler, finish), None) => running::State::Handler(handler, finish),
        (Start::Refused(error), None) => running::State::Refused(Some(error)),
        (start, enclosing) => running::State::Boxed(Box::pin(async move {
            let work = async {
                let (handler, finish) = match start {
                    Start::Handler(handler, finish) => (handler, finish),
                    Start::Waiting(call, done) => {
                        let rest = Order::new(call.ability, around, call.ctx.continues(), surface)
                            .skip(done);
                        waiting(*call, around, rest).await?
                    }
                    Start::Refused(error) => return Err(error),
                };
                let mut output = handler.await?;
                running::finish(&mut output, finish);
                Ok(output)
            };
            // The work stays where it is: awaited in place, or through what encloses it.
            let work = std::pin::pin!(work);
            match enclosing {
                Some(enclose) => enclose(work).await,
                None => work.await,
            }
        })),
    };
    Running::new(state, watching)
}

/// Where a call stands once the stages that only check have run.
enum Start<'a> {
    /// Every stage passed: the handler is running, and what the stages left for its output.
    Handler(Handler<'a>, Finishes<'a>),
    /// The stage after the first `done` of [`Order`](order::Order) may wait: it and the rest are next.
    /// (Boxed: the rare path keeps every call's future small.)
    Waiting(Box<Call<'a>>, usize),
    Refused(AbilityError),
}

impl Call<'_> {
    /// Make the arguments as sent the arguments object, if `stage` reads it and no stage has
    /// yet.
    #[inline]
    fn read_for(&mut self, reads: bool) -> Result<(), AbilityError> {
        if self.unread && reads {
            self.unread = false;
            self.args = into_object(std::mem::take(&mut self.input))?;
        }
        Ok(())
    }
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
        unread: true,
        input: args,
        report: around.report,
        finish: None,
    };
    let guards = around.guards.map(|guards| &**guards);
    if surface.is_empty() && guards.is_none_or(|guards| guards.users.is_empty()) {
        let links = guards.map_or(&order::UNGUARDED[..], |guards| &guards.arguments);
        match order::direct(&mut call, links, guards.map(|guards| &guards.rates)) {
            Ok(None) => {}
            Ok(Some(done)) => return Start::Waiting(Box::new(call), done),
            Err(error) => return Start::Refused(error),
        }
    } else {
        let order = Order::new(ability, around, call.ctx.continues(), surface);
        for (done, (stage, reads)) in order.enumerate() {
            if stage.waits() {
                return Start::Waiting(Box::new(call), done);
            }
            if let Err(error) = call.read_for(reads).and_then(|()| stage.check(&mut call)) {
                return Start::Refused(error);
            }
        }
    }
    let Call {
        ability,
        ctx,
        input,
        finish,
        ..
    } = call;
    Start::Handler(around.handler(ability, ctx, input), finish)
}

/// The stages from the first that may wait to the last, then the handler.
async fn waiting<'a>(
    mut call: Call<'a>,
    around: Around<'a>,
    rest: impl Iterator<Item = order::Step<'a>>,
) -> Result<(Handler<'a>, Finishes<'a>), AbilityError> {
    for (stage, reads) in rest {
        call.read_for(reads)?;
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
    Ok((around.handler(ability, ctx, input), finish))
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
        self: &Arc<Self>,
        ctx: Context,
        args: Value,
        guards: &Arc<Guards>,
    ) -> Result<CallOutput, AbilityError> {
        run(self, ctx, args, Around::guarded(guards, self), &[]).await
    }

    /// `PERMISSION_DENIED` unless the caller holds the ability's scope: the permission stage,
    /// and what surfaces that act outside a call (completion) check with the same words.
    pub(crate) fn check_permission(&self, ctx: &Context) -> Result<(), AbilityError> {
        stages::permission(self, ctx)
    }
}
