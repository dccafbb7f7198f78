//! The code behind an ability, as a trait object: validated, unwrapped JSON in, output out.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::__private::AbilityOutput;
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
/// `#[ability]` implements it for the annotated function; [`AbilityBuilder::handler`]
/// (crate::AbilityBuilder::handler) for an async closure. Implement it yourself for a handler
/// that holds its own state, such as a connection to another server.
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
