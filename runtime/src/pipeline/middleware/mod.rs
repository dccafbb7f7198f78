//! Middleware: a concern of every call (a policy, a limit, a redactor, a log) written once
//! and put around the abilities of a server.
//!
//! A [`Middleware`] sees what a call is (the ability's name, semantic, danger, scopes,
//! category and meta; the caller; the surface; the arguments; the context) and may:
//!
//! - refuse it with a typed error, or change its arguments, in [`check`](Middleware::check),
//!   at its [`Place`]: among the arguments as sent, or (the default) among the validated
//!   arguments, just before the confirmation gate and the handler;
//! - run around the handler in [`around`](Middleware::around): time it, change its output,
//!   answer in its place, or hand it to a `tower` service ([`Layered`], feature `tower`);
//! - hear how every call ended, refused or not, in [`watch`](Middleware::watch).
//!
//! The server's own concerns sit in the same [`Chain`] as named [`Builtin`]s: the traces,
//! the metrics, the audit trail, the permission check, the rate limit and the site check. A chain runs its links in
//! their order within each place:
//!
//! ```text
//! watch: every link that watches, from before the first check to the outcome
//! Arguments: permission -> rate -> site -> your Arguments checks   (arguments as sent)
//!            -> the surface's argument stages -> input (normalized, validated, unwrapped)
//! Validated: your checks (the default place) -> the surface's gates (MCP-AQL confirmation)
//! around:    your `around`s, first link outermost -> the handler
//! ```
//!
//! A chain is the server's: [`ServerBuilder::middleware`](crate::ServerBuilder::middleware)
//! adds a link at its end, [`ServerBuilder::chain`](crate::ServerBuilder::chain) sets the
//! whole chain (to reorder, replace or remove a built-in). [`Ability::call`] runs outside any
//! server, with the permission and site checks only.
//!
//! ```
//! use abilities::middleware::{CallRef, Middleware};
//! use abilities::{AbilityError, ErrorCode, Semantic, Server, ability};
//!
//! /// Nothing that deletes runs on a Sunday.
//! struct NoDeletes {
//!     sunday: bool,
//! }
//!
//! impl Middleware for NoDeletes {
//!     fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
//!         if self.sunday && call.ability().semantic() == Semantic::Delete {
//!             return Err(AbilityError::new(ErrorCode::PermissionDenied, "not on a Sunday"));
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let server = Server::builder()
//!     .middleware(NoDeletes { sunday: true })
//!     .build()
//!     .unwrap();
//! # drop(server);
//! ```

mod chain;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::Value;

use super::CallOutput;
#[cfg(feature = "tower")]
pub use super::layered::{LayerCall, Layered, Rest};
use super::stages::middleware_panicked;
use crate::{Ability, AbilityError, Caller, Context};
pub(crate) use chain::Link;
pub use chain::{Builtin, Chain};

/// The rest of a call, running: what [`Middleware::around`] and [`Next::run`] return.
pub type Running = Pin<Box<dyn Future<Output = Result<CallOutput, AbilityError>> + Send>>;

/// What hears how a call ended: its output, or the error that refused or failed it.
pub type Watcher = Box<dyn FnOnce(Result<&CallOutput, &AbilityError>) + Send>;

/// A concern of every call. Every method has a default that does nothing, so a middleware
/// implements only what its job needs.
pub trait Middleware: Send + Sync + 'static {
    /// The name the chain shows for it.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Whether it takes part in calls of `ability` (by default, every ability's): asked at
    /// each of its hooks, so keep it cheap and steady. A panic here fails the call.
    fn applies_to(&self, _ability: &Ability) -> bool {
        true
    }

    /// Where [`check`](Self::check) runs: read when the server is built, and at each call,
    /// so it must not change.
    fn place(&self) -> Place {
        Place::Validated
    }

    /// Check or change the call; an error refuses it, and no later check, gate or handler
    /// runs. Arguments changed at [`Place::Validated`] are not validated again.
    fn check(&self, _call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        Ok(())
    }

    /// Run around the handler (and the `around`s of the links after this one): call
    /// `next.run(call)` to go on, or answer without it. By default, goes on.
    fn around(&self, call: Invocation, next: Next) -> Running {
        next.run(call)
    }

    /// Watch a call from before its first check to its outcome, with its arguments as
    /// sent: the returned [`Watcher`] hears how it ended. `None`: not this call.
    fn watch(&self, _ability: &Ability, _ctx: &Context, _arguments: &Value) -> Option<Watcher> {
        None
    }
}

/// A shared middleware (the caller keeps a handle on what it records).
impl<M: Middleware + ?Sized> Middleware for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn applies_to(&self, ability: &Ability) -> bool {
        (**self).applies_to(ability)
    }

    fn place(&self) -> Place {
        (**self).place()
    }

    fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        (**self).check(call)
    }

    fn around(&self, call: Invocation, next: Next) -> Running {
        (**self).around(call, next)
    }

    fn watch(&self, ability: &Ability, ctx: &Context, arguments: &Value) -> Option<Watcher> {
        (**self).watch(ability, ctx, arguments)
    }
}

/// Where a middleware's [`check`](Middleware::check) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Place {
    /// Among the arguments as sent (an object; without `site_id` when the site check comes
    /// earlier in the chain, as by default), after the chain's checks before it, before the
    /// input is normalized and validated.
    Arguments,
    /// Among the validated arguments, as the handler gets them (the bare value of a
    /// flattened input), before the surface's gates and the handler.
    Validated,
}

/// A call as a [`check`](Middleware::check) sees it.
#[derive(Debug)]
pub struct CallRef<'a> {
    pub(super) ability: &'a Ability,
    pub(super) ctx: &'a Context,
    pub(super) arguments: &'a mut Value,
}

impl CallRef<'_> {
    /// The ability called.
    pub fn ability(&self) -> &Ability {
        self.ability
    }

    /// The call's context.
    pub fn ctx(&self) -> &Context {
        self.ctx
    }

    /// Who calls.
    pub fn caller(&self) -> &Caller {
        self.ctx.caller()
    }

    /// The surface the call came through: `native`, `standard`, `meta`, `aql`, `resource`,
    /// `prompt`, `task`, or `in-process`.
    pub fn surface(&self) -> &'static str {
        self.ctx.via()
    }

    /// The arguments (see [`Place`] for their form).
    pub fn arguments(&self) -> &Value {
        self.arguments
    }

    /// The arguments, to change. At [`Place::Arguments`] they must stay an object.
    pub fn arguments_mut(&mut self) -> &mut Value {
        self.arguments
    }
}

/// A call about to reach its handler, as [`around`](Middleware::around) gets it: it owns
/// what it needs, so it may move into a spawned task or a `tower` service.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub(super) ability: Arc<Ability>,
    pub(super) ctx: Context,
    pub(super) input: Value,
}

impl Invocation {
    /// The ability called.
    pub fn ability(&self) -> &Ability {
        &self.ability
    }

    /// The call's context.
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// Who calls.
    pub fn caller(&self) -> &Caller {
        self.ctx.caller()
    }

    /// The surface the call came through (see [`CallRef::surface`]).
    pub fn surface(&self) -> &'static str {
        self.ctx.via()
    }

    /// The validated arguments, as the handler gets them.
    pub fn arguments(&self) -> &Value {
        &self.input
    }

    /// The arguments, to change (they are not validated again).
    pub fn arguments_mut(&mut self) -> &mut Value {
        &mut self.input
    }

    /// `value` as the handler's output would be: what an `around` answers in the handler's
    /// place (a cached answer). An error when the ability's output schema is an object and
    /// `value` is not.
    pub fn output(&self, value: Value) -> Result<CallOutput, AbilityError> {
        super::stages::structured(&self.ability, value)
    }
}

/// The rest of a call after one [`around`](Middleware::around): the `around`s of later links,
/// then the handler. Cheap to clone (a retry runs it again).
#[derive(Clone)]
pub struct Next {
    pub(super) links: Arc<[Arc<dyn Middleware>]>,
    pub(super) at: usize,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.links.len().saturating_sub(self.at))
            .finish()
    }
}

impl Next {
    /// Run the rest of the call.
    pub fn run(self, call: Invocation) -> Running {
        let Self { links, at } = self;
        let mut found = None;
        for (i, link) in links.iter().enumerate().skip(at) {
            match applies(&**link, &call.ability) {
                Ok(true) => {
                    found = Some(i - at);
                    break;
                }
                Ok(false) => {}
                Err(()) => return Box::pin(std::future::ready(Err(Panicked::error()))),
            }
        }
        match found {
            Some(found) => {
                let link = Arc::clone(&links[at + found]);
                let next = Self {
                    links,
                    at: at + found + 1,
                };
                // A panicking middleware fails its call, not the server.
                match catch_unwind(AssertUnwindSafe(|| link.around(call, next))) {
                    Ok(running) => Box::pin(AssertUnwindSafe(running).catch_unwind().map(
                        move |outcome| {
                            outcome.unwrap_or_else(|panic| {
                                Err(middleware_panicked(link.name(), &*panic))
                            })
                        },
                    )),
                    Err(panic) => {
                        let error = middleware_panicked(link.name(), &*panic);
                        Box::pin(std::future::ready(Err(error)))
                    }
                }
            }
            None => Box::pin(async move {
                let Invocation {
                    ability,
                    ctx,
                    input,
                } = call;
                super::stages::handle(&ability, ctx, input).await
            }),
        }
    }
}

/// Whether `middleware` takes part in a call of `ability`: `Err` when asking it panicked
/// (logged).
pub(super) fn applies(middleware: &dyn Middleware, ability: &Ability) -> Result<bool, ()> {
    catch_unwind(AssertUnwindSafe(|| middleware.applies_to(ability))).map_err(|panic| {
        middleware_panicked(middleware.name(), &*panic);
    })
}

/// The stage of a middleware whose `applies_to` panicked: the call fails.
pub(super) struct Panicked;

impl Panicked {
    fn error() -> AbilityError {
        AbilityError::internal("the call failed unexpectedly")
    }
}

impl super::Stage for Panicked {
    fn check<'s>(&'s self, _call: &mut super::Call<'s>) -> Result<(), AbilityError> {
        Err(Self::error())
    }
}

/// Only for some abilities: a middleware that takes part in the calls of one category, one
/// ability, or those a test picks.
///
/// ```
/// use abilities::middleware::{Middleware, Only};
/// # struct Audit;
/// # impl Middleware for Audit {}
/// let orders = Only::category("orders", Audit);
/// let one = Only::ability("delete_order", Audit);
/// let deletes = Only::matching(|a| a.semantic() == abilities::Semantic::Delete, Audit);
/// # drop((orders, one, deletes));
/// ```
pub struct Only<M> {
    test: Box<dyn Fn(&Ability) -> bool + Send + Sync>,
    middleware: M,
}

impl<M> std::fmt::Debug for Only<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Only").finish_non_exhaustive()
    }
}

impl<M: Middleware> Only<M> {
    /// `middleware` for the abilities of `category`.
    pub fn category(category: impl Into<String>, middleware: M) -> Self {
        let category = category.into();
        Self::matching(move |a| a.category() == Some(category.as_str()), middleware)
    }

    /// `middleware` for the ability named `name` (its ability or tool name).
    pub fn ability(name: impl Into<String>, middleware: M) -> Self {
        let name = name.into();
        Self::matching(
            move |a| a.name() == name || a.tool_name() == name,
            middleware,
        )
    }

    /// `middleware` for the abilities `test` picks.
    pub fn matching(
        test: impl Fn(&Ability) -> bool + Send + Sync + 'static,
        middleware: M,
    ) -> Self {
        Self {
            test: Box::new(test),
            middleware,
        }
    }
}

impl<M: Middleware> Middleware for Only<M> {
    fn name(&self) -> &str {
        self.middleware.name()
    }

    fn applies_to(&self, ability: &Ability) -> bool {
        (self.test)(ability) && self.middleware.applies_to(ability)
    }

    fn place(&self) -> Place {
        self.middleware.place()
    }

    fn check(&self, call: &mut CallRef<'_>) -> Result<(), AbilityError> {
        self.middleware.check(call)
    }

    fn around(&self, call: Invocation, next: Next) -> Running {
        self.middleware.around(call, next)
    }

    fn watch(&self, ability: &Ability, ctx: &Context, arguments: &Value) -> Option<Watcher> {
        self.middleware.watch(ability, ctx, arguments)
    }
}

/// A middleware as a stage of the pipeline: its check at its place, its watch.
impl super::Stage for Arc<dyn Middleware> {
    fn place(&self) -> super::Place {
        match Middleware::place(&**self) {
            Place::Arguments => super::Place::Arguments,
            Place::Validated => super::Place::Validated,
        }
    }

    fn check<'s>(&'s self, call: &mut super::Call<'s>) -> Result<(), AbilityError> {
        catch_unwind(AssertUnwindSafe(|| check_at(&**self, call)))
            .unwrap_or_else(|panic| Err(middleware_panicked(Middleware::name(&**self), &*panic)))
    }

    fn watch<'a>(
        &'a self,
        ability: &'a Ability,
        ctx: &Context,
        args: &Value,
    ) -> Option<super::Settle<'a>> {
        let name = || Middleware::name(&**self);
        let watcher = catch_unwind(AssertUnwindSafe(|| {
            Middleware::watch(&**self, ability, ctx, args)
        }))
        .unwrap_or_else(|panic| {
            middleware_panicked(name(), &*panic);
            None
        })?;
        Some(Box::new(move |outcome| {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| watcher(outcome))) {
                middleware_panicked(name(), &*panic);
            }
        }))
    }
}

/// `middleware`'s check, at its place.
fn check_at(middleware: &dyn Middleware, call: &mut super::Call<'_>) -> Result<(), AbilityError> {
    match middleware.place() {
        Place::Validated => middleware.check(&mut CallRef {
            ability: call.ability,
            ctx: &call.ctx,
            arguments: &mut call.input,
        }),
        Place::Arguments => {
            let mut arguments = Value::Object(std::mem::take(&mut call.args));
            let checked = middleware.check(&mut CallRef {
                ability: call.ability,
                ctx: &call.ctx,
                arguments: &mut arguments,
            });
            match arguments {
                Value::Object(map) => call.args = map,
                _ => {
                    return Err(AbilityError::internal(format!(
                        "the middleware '{}' left arguments that are not an object",
                        middleware.name()
                    )));
                }
            }
            checked
        }
    }
}
