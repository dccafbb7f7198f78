//! The call pipeline: permission -> normalize -> validate -> unwrap -> handler (panic-safe)
//! -> wrap. Transport-free: every surface calls through here.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use crate::normalize::{normalize, unwrap_input};
use crate::{Ability, AbilityError, Context, ErrorCode, Registry};

/// Names longer than this are cut in error messages.
const MAX_ECHOED_NAME: usize = 100;

impl Registry {
    /// Call the ability named `name` (ability name or tool name) with wire `args` (`null` for
    /// none), returning the wire result: always a JSON object, the output wrapped under
    /// `result` where its schema is not an object.
    ///
    /// Errors carry an upper-snake [`ErrorCode`]: `NOT_FOUND_ABILITY`, `PERMISSION_DENIED`,
    /// `VALIDATION_*`, the handler's own, or `INTERNAL_ERROR` when the handler panics.
    pub async fn call(&self, ctx: Context, name: &str, args: Value) -> Result<Value, AbilityError> {
        let Some(ability) = self.get(name) else {
            let shown: String = name.chars().take(MAX_ECHOED_NAME).collect();
            return Err(AbilityError::new(
                ErrorCode::NotFoundAbility,
                format!("no ability named '{shown}'"),
            )
            .with_details(json!({ "name": shown })));
        };
        ability.call(ctx, args).await
    }
}

impl Ability {
    /// Run the whole pipeline for this ability. See [`Registry::call`].
    pub async fn call(&self, ctx: Context, args: Value) -> Result<Value, AbilityError> {
        if let Some(scope) = self.def.permission
            && !ctx.caller().has_scope(scope)
        {
            return Err(AbilityError::permission_denied(format!(
                "'{}' requires the scope '{scope}'",
                self.def.name
            ))
            .with_details(json!({ "required_scope": scope })));
        }
        let args = normalize(&self.input_shape, args)?;
        if let Some(validator) = &self.validator {
            crate::validate::check(validator, &args)?;
        }
        let input = unwrap_input(&self.input_shape, args);
        let output = self.run_handler(ctx, input).await?;
        self.wrap_output(output)
    }

    async fn run_handler(&self, ctx: Context, input: Value) -> Result<Value, AbilityError> {
        let call = self.def.call;
        let outcome = match std::panic::catch_unwind(AssertUnwindSafe(|| call(ctx, input))) {
            Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        outcome.unwrap_or_else(|panic| {
            tracing::error!(
                ability = self.def.name,
                panic = panic_message(&*panic),
                "ability panicked"
            );
            Err(AbilityError::internal(format!(
                "'{}' failed unexpectedly",
                self.def.name
            )))
        })
    }

    fn wrap_output(&self, output: Value) -> Result<Value, AbilityError> {
        if self.output_wrapped {
            return Ok(Value::Object(Map::from_iter([(
                "result".to_owned(),
                output,
            )])));
        }
        match output {
            Value::Object(_) => Ok(output),
            // `()` returns.
            Value::Null if self.output_schema().is_none() => Ok(Value::Object(Map::new())),
            other => {
                tracing::error!(
                    ability = self.def.name,
                    got = crate::normalize::json_type(&other),
                    "ability returned a non-object for an object output schema"
                );
                Err(AbilityError::internal(format!(
                    "'{}' returned a value its output schema does not allow",
                    self.def.name
                )))
            }
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(non-string panic payload)")
}
