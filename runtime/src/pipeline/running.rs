//! A call's future once its checks have run: the handler and what hears how it ends,
//! written out by hand so the common call moves a few words, not an async state machine
//! that holds every level's arguments.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use super::{CallOutput, Finishes, Handler, Settle};
use crate::AbilityError;

/// The future of [`run`](super::run).
pub(crate) struct Running<'a> {
    state: State<'a>,
    /// What hears the outcome (the links that watch the call), told once.
    watching: Option<Settle<'a>>,
}

/// Where the call is.
pub(super) enum State<'a> {
    /// The handler runs; what the stages left for its output is next.
    Handler(Handler<'a>, Finishes<'a>),
    /// A stage refused the call (taken when told).
    Refused(Option<AbilityError>),
    /// The rest of the call may wait on a stage, or runs inside what a link opened.
    Boxed(Pin<Box<dyn Future<Output = Result<CallOutput, AbilityError>> + Send + 'a>>),
}

impl<'a> Running<'a> {
    pub(super) fn new(state: State<'a>, watching: Option<Settle<'a>>) -> Self {
        Self { state, watching }
    }
}

/// Apply what the stages left for the output, last first.
pub(super) fn finish(output: &mut CallOutput, finish: Finishes<'_>) {
    if let Some(finish) = finish {
        for finish in finish.into_iter().rev() {
            finish(output);
        }
    }
}

impl Future for Running<'_> {
    type Output = Result<CallOutput, AbilityError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let outcome = match &mut this.state {
            State::Handler(handler, finish) => {
                ready!(Pin::new(handler).poll(cx)).map(|mut output| {
                    self::finish(&mut output, finish.take());
                    output
                })
            }
            State::Refused(error) => Err(error
                .take()
                .unwrap_or_else(|| AbilityError::internal("the call was polled after its end"))),
            State::Boxed(rest) => ready!(rest.as_mut().poll(cx)),
        };
        if let Some(settle) = this.watching.take() {
            settle(outcome.as_ref());
        }
        Poll::Ready(outcome)
    }
}
