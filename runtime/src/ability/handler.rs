//! The code behind an ability, as a trait object: validated, unwrapped JSON in, output out.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::{AbilityError, Content, Context, Prompt};

/// The boxed future a [`Handler`] returns.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<Output, AbilityError>> + Send>>;

/// What a handler produced: structured JSON (bare, before any `result` wrap), content blocks,
/// a prompt's messages, or none of them (`()` returns).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Output {
    /// The structured result as the handler returned it.
    pub structured: Option<Value>,
    /// Content blocks beyond the JSON text.
    pub content: Option<Vec<Content>>,
    /// The messages of a prompt.
    pub prompt: Option<Prompt>,
}

impl Output {
    /// Structured JSON alone.
    pub fn json(value: Value) -> Self {
        Self {
            structured: Some(value),
            ..Self::default()
        }
    }

    /// Content blocks alone (no structured result).
    pub fn contents(content: Vec<Content>) -> Self {
        Self {
            content: Some(content),
            ..Self::default()
        }
    }
}

/// The code an [`Ability`](crate::Ability) runs once the pipeline has checked the call: the
/// validated input, unwrapped (a flattened value arrives bare), in; output out.
///
/// `#[ability]` implements it for the annotated function; [`AbilityBuilder::handler`](crate::AbilityBuilder::handler)
/// (crate::AbilityBuilder::handler) for an async closure. Implement it yourself for a handler
/// that holds its own state, such as a connection to another server.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an ability `Handler`",
    label = "cannot run an ability",
    note = "give the builder an async closure `|ctx, input| async move {{ ... }}` with `.handler(..)`, or implement `abilities::handler::Handler` for it"
)]
pub trait Handler: Send + Sync + 'static {
    /// Run the ability.
    fn call(&self, ctx: Context, args: Value) -> CallFuture;
}

/// The entry point `#[ability]` generates.
pub(crate) struct FnHandler(pub(crate) fn(Context, Value) -> CallFuture);

impl Handler for FnHandler {
    fn call(&self, ctx: Context, args: Value) -> CallFuture {
        (self.0)(ctx, args)
    }
}

/// An async closure returning anything an `#[ability]` function may return.
pub(crate) struct ClosureHandler<F>(pub(crate) F);

impl<F, Fut, R> Handler for ClosureHandler<F>
where
    F: Fn(Context, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, AbilityError>> + Send + 'static,
    R: AbilityOutput,
{
    fn call(&self, ctx: Context, args: Value) -> CallFuture {
        let future = (self.0)(ctx, args);
        Box::pin(async move { future.await?.into_output() })
    }
}

/// A type that can be returned by an ability: its output schema, and how it becomes output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by an ability",
    label = "needs `Serialize` and `JsonSchema`",
    note = "derive `serde::Serialize` and `schemars::JsonSchema` for it, or return `abilities::Rich<T>`, `abilities::resource::Contents` or `abilities::prompt::Prompt`"
)]
pub trait AbilityOutput: Sized {
    /// The output schema, before the wire transformation; `None` for content-only results.
    fn output_schema() -> Option<schemars::Schema>;
    /// Turn the handler's value into output.
    fn into_output(self) -> Result<Output, AbilityError>;
}

// Not recommended: a type that is not `Serialize` or not `JsonSchema` is told once that it
// cannot be returned, not once for each bound with every type that has it.
#[diagnostic::do_not_recommend]
impl<T: serde::Serialize + schemars::JsonSchema> AbilityOutput for T {
    fn output_schema() -> Option<schemars::Schema> {
        Some(crate::schema::output_schema_for::<T>())
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            structured: Some(encode(self)?),
            ..Output::default()
        })
    }
}

impl<T: serde::Serialize + schemars::JsonSchema> AbilityOutput for crate::Rich<T> {
    fn output_schema() -> Option<schemars::Schema> {
        Some(crate::schema::output_schema_for::<T>())
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            structured: Some(encode(self.structured)?),
            content: Some(self.content),
            ..Output::default()
        })
    }
}

impl AbilityOutput for crate::Contents {
    fn output_schema() -> Option<schemars::Schema> {
        None
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            content: Some(self.0),
            ..Output::default()
        })
    }
}

impl AbilityOutput for crate::Prompt {
    fn output_schema() -> Option<schemars::Schema> {
        None
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            content: Some(self.messages.iter().map(|m| m.content.clone()).collect()),
            prompt: Some(self),
            structured: None,
        })
    }
}

/// A return type, asked by its type (never its name) whether it is a `Result`: the generated
/// code refuses a `Result` behind another name, which would otherwise be served as a value.
#[doc(hidden)]
pub struct Returned<T>(std::marker::PhantomData<T>);

impl<T, E> Returned<Result<T, E>> {
    /// An inherent item: it shadows [`NotResult`]'s for every `Result`.
    pub const IS_RESULT: bool = true;
}

/// What [`Returned`] says of every type that is not a `Result`.
#[doc(hidden)]
pub trait NotResult {
    const IS_RESULT: bool = false;
}

impl<T> NotResult for Returned<T> {}

/// The output schema of `()` returns: none.
#[doc(hidden)]
pub fn no_output_schema() -> Option<schemars::Schema> {
    None
}

/// An error type an ability may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error of an ability",
    label = "no conversion into `AbilityError`",
    note = "implement `From<{Self}> for abilities::AbilityError`"
)]
pub trait IntoAbilityError {
    /// The framework error.
    fn into_ability_error(self) -> AbilityError;
}
impl<E: Into<AbilityError>> IntoAbilityError for E {
    fn into_ability_error(self) -> AbilityError {
        self.into()
    }
}

/// Serialize a handler's output. A NaN or an infinity, which JSON cannot carry (serde_json
/// would write `null`), fails the call instead of reaching the client as a value the
/// handler never returned.
fn encode<T: serde::Serialize>(value: T) -> Result<Value, AbilityError> {
    let json = serde_json::to_value(&value).map_err(|e| {
        tracing::error!(error = %e, "ability output failed to serialize");
        AbilityError::internal("the ability's result could not be serialized")
    })?;
    if let Some(at) = super::finite::non_finite(&value, &json) {
        let place = if at.is_empty() {
            "the result"
        } else {
            at.as_str()
        };
        return Err(AbilityError::new(
            crate::ErrorCode::ExecutionFailed,
            format!("The result holds a number JSON cannot carry (NaN or an infinity) at {place}"),
        )
        .with_details(serde_json::json!({"pointer": at, "reason": "non-finite number"})));
    }
    Ok(json)
}
