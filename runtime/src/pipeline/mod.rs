//! The call pipeline: one [`Call`] through ordered [`Stage`]s, then the handler.
//!
//! ```text
//! permission -> site -> [surface: arguments] -> input (normalize, validate, unwrap)
//!            -> [surface: gate] -> handler (panic-safe, cancellable, time-limited)
//!            -> [every stage's finish, last first] -> output (the bare value kept)
//! ```
//!
//! A stage is a small value with one job. The core stages run for every call; a surface adds
//! its own at the two places it may (MCP-AQL: unknown parameters, UPDATE fields and collection
//! queries among the arguments, the confirmation gate before the handler), and the next
//! features (idempotency, rate limits, an audit trail) are new stages, not edits of the
//! others. Surfaces only map the wire to a call and the output back.

mod output;
mod stages;

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

pub use output::CallOutput;

use crate::error::Lookup;
use crate::normalize::into_object;
use crate::{Ability, AbilityError, Context, Registry};

/// One call of one ability, as it goes through the stages.
pub(crate) struct Call<'a> {
    pub(crate) ability: &'a Ability,
    pub(crate) ctx: Context,
    /// The arguments object; stages before the input stage may take keys out or rewrite it.
    pub(crate) args: Map<String, Value>,
    /// What the handler gets: set by the input stage.
    pub(crate) input: Value,
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

    /// Check or change the call; an error refuses it and no later stage runs.
    fn check(&self, _call: &mut Call<'_>) -> Result<(), AbilityError> {
        Ok(())
    }

    /// Work that waits, after `check`; `None` when there is nothing to wait for.
    fn wait<'a>(&'a self, _call: &'a Call<'_>) -> Option<StageFuture<'a>> {
        None
    }

    /// Look at or change the output, after the handler (stages finish last first).
    fn finish(&self, _output: &mut CallOutput) {}
}

/// Run `ability` with wire `args` through the core stages and `surface`'s.
pub(crate) async fn run(
    ability: &Ability,
    ctx: Context,
    args: Value,
    surface: &[&dyn Stage],
) -> Result<CallOutput, AbilityError> {
    let core_before: [&dyn Stage; 2] = [&stages::Permission, &stages::SiteCheck];
    let input: &dyn Stage = &stages::Input;
    let mut call = Call {
        ability,
        ctx,
        args: Map::new(),
        input: Value::Null,
    };
    // Permission first: nothing about the input is revealed to a caller without the scope.
    core_before[0].check(&mut call)?;
    call.args = into_object(args)?;
    core_before[1].check(&mut call)?;
    let order = surface
        .iter()
        .filter(|s| s.place() == Place::Arguments)
        .chain(std::iter::once(&input))
        .chain(surface.iter().filter(|s| s.place() == Place::Gate));
    for stage in order {
        stage.check(&mut call)?;
        if let Some(waiting) = stage.wait(&call) {
            waiting.await?;
        }
    }
    let Call {
        ability,
        ctx,
        input,
        ..
    } = call;
    let mut output = stages::handle(ability, ctx, input).await?;
    for stage in surface.iter().rev() {
        stage.finish(&mut output);
    }
    Ok(output)
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
        run(self, ctx, args, &[]).await
    }

    /// `PERMISSION_DENIED` unless the caller holds the ability's scope: the permission stage,
    /// and what surfaces that act outside a call (completion) check with the same words.
    pub(crate) fn check_permission(&self, ctx: &Context) -> Result<(), AbilityError> {
        stages::permission(self, ctx)
    }
}
