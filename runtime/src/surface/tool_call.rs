//! A tool call through a surface, running: its answer at once, the pipeline's future with
//! the surface's mapping of the outcome, or a rarer call boxed apart.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use rmcp::model::{CallToolResult, ErrorData};

use super::View;
use crate::pipeline::Running;

/// The answer a tool call comes to.
type Answer = Result<CallToolResult, ErrorData>;

/// The future of [`View::call`].
pub(crate) enum ToolCall<'a> {
    /// Answered without running anything (taken when polled).
    Ready(Option<Answer>),
    /// An ability's call, mapped to the surface's result when it ends.
    Running(&'a View, Running<'a>),
    /// A call that must be confirmed, a meta tool, an MCP-AQL endpoint.
    Boxed(Pin<Box<dyn Future<Output = Answer> + Send + 'a>>),
}

impl<'a> ToolCall<'a> {
    pub(super) fn ready(answer: Answer) -> Self {
        Self::Ready(Some(answer))
    }

    pub(super) fn boxed(work: impl Future<Output = Answer> + Send + 'a) -> Self {
        Self::Boxed(Box::pin(work))
    }
}

impl Future for ToolCall<'_> {
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Answer> {
        match self.get_mut() {
            Self::Ready(answer) => Poll::Ready(answer.take().unwrap_or_else(|| {
                Err(ErrorData::internal_error(
                    "the tool call was polled after its end",
                    None,
                ))
            })),
            Self::Running(view, running) => {
                Poll::Ready(view.finish(ready!(Pin::new(running).poll(cx))))
            }
            Self::Boxed(work) => work.as_mut().poll(cx),
        }
    }
}
