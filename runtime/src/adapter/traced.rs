//! A request's span (feature `otel`): made before the request is served, its parent the
//! client's trace context, the request served inside it, and ended with how it went.

use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::ErrorData;
use rmcp::service::RequestContext;

use super::McpHandler;

/// The span a request is served in, when the server traces.
pub(super) struct Traced {
    #[cfg(feature = "otel")]
    cx: Option<opentelemetry::Context>,
}

impl McpHandler {
    /// The span of the request `method` (on `target`, a tool's or prompt's name: named in
    /// the span only when the server serves it), made now: nothing when the server does not
    /// trace.
    pub(super) fn span(
        &self,
        method: &'static str,
        target: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Traced {
        #[cfg(feature = "otel")]
        {
            let cx = self.inner.guards.instruments.tracing().map(|tracing| {
                // A name the client made up never names a span.
                let target = target.filter(|name| {
                    let snapshot = self.inner.snapshot();
                    match method {
                        "tools/call" => snapshot.view(self.slot).tool(name).is_some(),
                        "prompts/get" => snapshot
                            .catalog
                            .prompts
                            .items
                            .iter()
                            .any(|p| p.name == *name),
                        _ => false,
                    }
                });
                let headers = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .map(|parts| &parts.headers);
                tracing.request(
                    method,
                    target,
                    context.id.to_string(),
                    &context.meta.0,
                    headers,
                )
            });
            Traced { cx }
        }
        #[cfg(not(feature = "otel"))]
        {
            let _ = (method, target, context);
            Traced {}
        }
    }
}

impl McpHandler {
    /// `work`, the answer to the request `method`, in the request's span.
    pub(super) fn traced<'w, T: 'w>(
        &self,
        method: &'static str,
        context: &RequestContext<RoleServer>,
        work: impl Future<Output = Result<T, ErrorData>> + Send + 'w,
    ) -> impl Future<Output = Result<T, ErrorData>> + Send + 'w {
        self.span(method, None, context).run(work, never)
    }
}

impl Traced {
    /// Serve the request (`work`) in the span; `failed` says whether an answer reports a
    /// failure of its own (a tool result with `isError`).
    ///
    /// Untraced, the work itself; traced, boxed (the span costs more than the box), so a
    /// request's future is no larger when the server traces.
    #[cfg(feature = "otel")]
    pub(super) fn run<'w, T: 'w>(
        self,
        work: impl Future<Output = Result<T, ErrorData>> + Send + 'w,
        failed: impl FnOnce(&T) -> bool + Send + 'w,
    ) -> impl Future<Output = Result<T, ErrorData>> + Send + 'w {
        let Some(cx) = self.cx else {
            return futures_util::future::Either::Left(work);
        };
        futures_util::future::Either::Right(Box::pin(async move {
            let out = crate::otel::within(Some(&cx), work).await;
            match &out {
                Ok(answer) if failed(answer) => crate::otel::end(&cx, Err("tool_error")),
                Ok(_) => crate::otel::end(&cx, Ok(())),
                Err(error) => crate::otel::end(&cx, Err(&error.code.0.to_string())),
            }
            out
        }))
    }

    /// Serve the request (`work`): the server does not trace.
    #[cfg(not(feature = "otel"))]
    pub(super) fn run<T, F: Future<Output = Result<T, ErrorData>>>(
        self,
        work: F,
        failed: impl FnOnce(&T) -> bool,
    ) -> F {
        let _ = failed;
        work
    }
}

/// Whether a `tools/call` answer is a tool error (`isError: true`).
pub(super) fn tool_error(answer: &rmcp::model::CallToolResponse) -> bool {
    matches!(answer, rmcp::model::CallToolResponse::Complete(result) if result.is_error == Some(true))
}

/// Answers that report no failure of their own.
pub(super) fn never<T>(_: &T) -> bool {
    false
}
