//! The call pipeline: permission -> normalize -> validate -> unwrap -> handler (panic-safe)
//! -> wrap. Transport-free: every surface calls through here.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::{Map, Value, json};

use crate::ability::{Output, SITE_ID};
use crate::normalize::{into_object, json_type, normalize, unwrap_input};
use crate::{Ability, AbilityError, Content, Context, ErrorCode, Prompt, Registry, Site};

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
            return Err(no_ability(name));
        };
        ability.call(ctx, args).await
    }
}

/// `NOT_FOUND_ABILITY` for `name`, cut to a readable length.
pub(crate) fn no_ability(name: &str) -> AbilityError {
    let shown: String = name.chars().take(MAX_ECHOED_NAME).collect();
    AbilityError::new(
        ErrorCode::NotFoundAbility,
        format!("no ability named '{shown}'"),
    )
    .with_details(json!({ "name": shown }))
}

/// The whole result of a call: the structured JSON as the wire carries it (wrapped where the
/// output schema says so) and any content blocks of a [`Rich`](crate::Rich) or
/// [`Contents`](crate::Contents) return.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutput {
    pub(crate) structured: Option<Value>,
    pub(crate) content: Option<Vec<Content>>,
    pub(crate) prompt: Option<Prompt>,
    /// `structured` is the handler's value wrapped under `result`.
    pub(crate) wrapped: bool,
}

impl CallOutput {
    /// The structured result (always an object), absent for content-only results.
    pub fn structured(&self) -> Option<&Value> {
        self.structured.as_ref()
    }

    /// Content blocks beyond the JSON text, if the ability returned any.
    pub fn content(&self) -> Option<&[Content]> {
        self.content.as_deref()
    }

    /// The messages of a [`Prompt`] return.
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }

    pub(crate) fn structured_only(value: Value) -> Self {
        Self {
            structured: Some(value),
            content: None,
            prompt: None,
            wrapped: false,
        }
    }

    /// The structured result as the handler returned it: without the `result` wrap.
    pub(crate) fn into_unwrapped(self) -> Self {
        let structured = match self.structured {
            Some(Value::Object(mut map)) if self.wrapped => map.remove("result"),
            other => other,
        };
        Self {
            structured,
            wrapped: false,
            ..self
        }
    }

    pub(crate) fn into_parts(self) -> (Option<Value>, Option<Vec<Content>>) {
        (self.structured, self.content)
    }
}

impl Ability {
    /// Run the whole pipeline for this ability and return the structured result (`{}` for
    /// content-only results). See [`Registry::call`].
    pub async fn call(&self, ctx: Context, args: Value) -> Result<Value, AbilityError> {
        let output = self.call_output(ctx, args).await?;
        Ok(output
            .structured
            .unwrap_or_else(|| Value::Object(Map::new())))
    }

    /// Run the whole pipeline for this ability and return everything it produced.
    pub async fn call_output(&self, ctx: Context, args: Value) -> Result<CallOutput, AbilityError> {
        self.check_permission(&ctx)?;
        let mut args = into_object(args)?;
        self.check_site(&ctx, &mut args)?;
        let args = normalize(&self.input_shape, args);
        if let Some(validator) = &self.validator {
            crate::validate::check(validator, &args)?;
        }
        let input = unwrap_input(&self.input_shape, args);
        let Output {
            structured,
            content,
            prompt,
        } = self.run_handler(ctx, input).await?;
        let (structured, wrapped) = match structured {
            Some(value) => {
                let (value, wrapped) = self.wrap_output(value)?;
                (Some(value), wrapped)
            }
            // `()` returns.
            None if content.is_none() => (Some(Value::Object(Map::new())), false),
            None => (None, false),
        };
        Ok(CallOutput {
            structured,
            content,
            prompt,
            wrapped,
        })
    }

    /// `PERMISSION_DENIED` unless the caller holds the ability's scope. The pipeline checks it
    /// first; surfaces that act before the pipeline (a confirmation, a completion) check it
    /// with the same words.
    pub(crate) fn check_permission(&self, ctx: &Context) -> Result<(), AbilityError> {
        match self.permission() {
            Some(scope) if !ctx.caller().has_scope(scope) => Err(AbilityError::permission_denied(
                format!("'{}' requires the scope '{scope}'", self.name()),
            )
            .with_details(json!({ "required_scope": scope }))),
            _ => Ok(()),
        }
    }

    /// Take `site_id` out of the arguments and reject it if it names another site. An ability
    /// with `site = false`, or whose own input has a `site_id`, leaves it alone.
    fn check_site(&self, ctx: &Context, args: &mut Map<String, Value>) -> Result<(), AbilityError> {
        if !self.takes_site_id() {
            return Ok(());
        }
        let expected = ctx.site().map(Site::site_id);
        match args.remove(SITE_ID) {
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

    async fn run_handler(&self, ctx: Context, input: Value) -> Result<Output, AbilityError> {
        let handler = &*self.handler;
        let cancellation = ctx.cancellation().clone();
        let timeout = ctx.timeout();
        let outcome =
            match std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(ctx, input))) {
                Ok(future) => {
                    let guarded = AssertUnwindSafe(future).catch_unwind();
                    let limited = async {
                        match timeout {
                            Some(limit) => tokio::time::timeout(limit, guarded)
                                .await
                                .unwrap_or_else(|_| {
                                    Ok(Err(AbilityError::new(
                                        ErrorCode::Timeout,
                                        format!(
                                            "'{}' did not finish within {} ms",
                                            self.name(),
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
                            format!("'{}' was cancelled by the caller", self.name()),
                        ))),
                    }
                }
                Err(panic) => Err(panic),
            };
        outcome.unwrap_or_else(|panic| {
            tracing::error!(
                ability = self.name(),
                panic = panic_message(&*panic),
                "ability panicked"
            );
            Err(AbilityError::internal(format!(
                "'{}' failed unexpectedly",
                self.name()
            )))
        })
    }

    /// The output as the wire carries it, and whether it was wrapped under `result`.
    fn wrap_output(&self, output: Value) -> Result<(Value, bool), AbilityError> {
        // Without a declared output schema (abilities built at run time), a non-object is
        // wrapped all the same: structured content is always an object.
        let wrap = self.output_wrapped || (self.output_schema().is_none() && !output.is_object());
        if wrap {
            let wrapped = Value::Object(Map::from_iter([("result".to_owned(), output)]));
            return Ok((wrapped, true));
        }
        match output {
            Value::Object(_) => Ok((output, false)),
            other => {
                tracing::error!(
                    ability = self.name(),
                    got = json_type(&other),
                    "ability returned a non-object for an object output schema"
                );
                Err(AbilityError::internal(format!(
                    "'{}' returned a value its output schema does not allow",
                    self.name()
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
