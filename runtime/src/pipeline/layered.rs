//! [`Layered`]: a `tower` layer (its timeout, concurrency limit, load shedding, retry) run
//! around the handler as middleware (feature `tower`).

use std::sync::{Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};

use tower::BoxError;
use tower_layer::Layer;
use tower_service::Service;

use super::CallOutput;
use super::middleware::{Invocation, Middleware, Next, Running};
use crate::{AbilityError, ErrorCode};

/// What a layered service gets: the call, and the rest of it to run.
#[derive(Clone, Debug)]
pub struct LayerCall {
    /// The call, as the handler will get it.
    pub call: Invocation,
    /// The rest of the call: the later links' `around`s, then the handler.
    pub next: Next,
}

/// The service at the bottom of every layered stack: it runs the rest of the call.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rest;

impl Service<LayerCall> for Rest {
    type Response = CallOutput;
    type Error = AbilityError;
    type Future = Running;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: LayerCall) -> Self::Future {
        request.next.run(request.call)
    }
}

/// A `tower` layer as middleware: the service it makes over [`Rest`] is built once and
/// cloned for each call, so what its clones share (a concurrency limit's permits) holds
/// across calls.
///
/// Errors come back typed: an [`AbilityError`] as it is, a timeout's `Elapsed` as `TIMEOUT`,
/// load shedding's `Overloaded` as `LIMIT_EXCEEDED`, anything else as `EXECUTION_FAILED`
/// (its text logged, not sent).
///
/// ```
/// use std::time::Duration;
/// use abilities::Server;
/// use abilities::middleware::{Layered, Only};
///
/// let server = Server::builder()
///     .middleware(Only::category("reports", Layered::new(
///         tower::timeout::TimeoutLayer::new(Duration::from_secs(5)),
///     )))
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
pub struct Layered<S> {
    service: Mutex<S>,
    name: String,
}

impl<S> std::fmt::Debug for Layered<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layered").field("name", &self.name).finish()
    }
}

impl<S> Layered<S> {
    /// The service `layer` makes over [`Rest`], as middleware.
    pub fn new<L: Layer<Rest, Service = S>>(layer: L) -> Self {
        Self {
            service: Mutex::new(layer.layer(Rest)),
            name: std::any::type_name::<L>().to_owned(),
        }
    }
}

impl<S> Middleware for Layered<S>
where
    S: Service<LayerCall, Response = CallOutput> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn around(&self, call: Invocation, next: Next) -> Running {
        let mut service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let ability = call.ability().name().to_owned();
        Box::pin(async move {
            std::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(|e| typed(&ability, e.into()))?;
            service
                .call(LayerCall { call, next })
                .await
                .map_err(|e| typed(&ability, e.into()))
        })
    }
}

/// A layer's error as the call's.
fn typed(ability: &str, error: BoxError) -> AbilityError {
    let error = match error.downcast::<AbilityError>() {
        Ok(error) => return *error,
        Err(error) => error,
    };
    if error.is::<tower::timeout::error::Elapsed>() {
        AbilityError::new(
            ErrorCode::Timeout,
            format!("'{ability}' did not finish within its time limit"),
        )
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        AbilityError::new(
            ErrorCode::LimitExceeded,
            format!("'{ability}' is at capacity; retry later"),
        )
    } else {
        // The layer's own words stay in the log: they may say more than a client should see.
        tracing::error!(ability, %error, "a tower layer failed a call");
        AbilityError::new(ErrorCode::ExecutionFailed, format!("'{ability}' failed"))
    }
}
