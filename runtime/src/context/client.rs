//! The way back to a call's client: notifications, requests to it, and the watch on its
//! cancellation once the context has gone to the handler.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::AbilityError;

/// The severity of a log message sent to the client, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// The way back to the client of a call: notifications it asked for. Implemented by the
/// server's transports.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `ClientChannel`",
    label = "cannot reach the client of a call",
    note = "implement `abilities::client::ClientChannel` for it: its methods send notifications and requests to the client"
)]
pub trait ClientChannel: Send + Sync {
    /// Send `notifications/progress` if the request carried a progress token.
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> ClientFuture<'_>;
    /// Send `notifications/message` if `level` is at or above the session's level.
    fn log(
        &self,
        level: LogLevel,
        logger: Option<String>,
        data: serde_json::Value,
    ) -> ClientFuture<'_>;
    /// Send `elicitation/create` with these params; the client's result. `key` names the
    /// question where the protocol asks by key (multi-round input).
    fn elicit<'a>(
        &'a self,
        key: Option<&'a str>,
        params: serde_json::Value,
    ) -> ClientRequestFuture<'a>;
    /// Send `sampling/createMessage` with these params; the client's result.
    fn sample<'a>(
        &'a self,
        key: Option<&'a str>,
        params: serde_json::Value,
    ) -> ClientRequestFuture<'a>;
    /// Send `roots/list`; the client's result.
    fn list_roots<'a>(&'a self, key: Option<&'a str>) -> ClientRequestFuture<'a>;
    /// Whether the client declared elicitation, so asking it may be answered (by default,
    /// yes: the channel finds out when asked).
    fn can_elicit(&self) -> bool {
        true
    }
    /// Whether the client declared sampling (by default, yes).
    fn can_sample(&self) -> bool {
        true
    }
    /// Whether the client declared roots (by default, yes).
    fn can_list_roots(&self) -> bool {
        true
    }
    /// Wait until the call may run on in the background ([`Context::background`]); by
    /// default, yield once.
    fn background(&self) -> ClientFuture<'_> {
        Box::pin(tokio::task::yield_now())
    }
    /// The request's cancellation, when the channel carries it (the context then needs no
    /// token of its own).
    fn cancellation(&self) -> Option<&CancellationToken> {
        None
    }
    /// The request's id, when the channel carries it (read only when asked for).
    fn request_id(&self) -> Option<&str> {
        None
    }
    /// The request's protocol version, when the channel carries it (read only when asked
    /// for).
    fn protocol_version(&self) -> Option<&str> {
        None
    }
    /// When the answer last handed to the handler came with the request (multi-round input:
    /// sealed in a verified `requestState`, or sent up front), what names it: every retry
    /// carrying it hands it out again, so what may happen once per answer is spent against
    /// it. `None` when answers come live (a request to the client, a task's `tasks/update`),
    /// once each.
    fn sealed_answer(&self) -> Option<String> {
        None
    }
}

/// The token of a context whose request has none: never cancelled.
pub(crate) fn never_cancelled() -> &'static CancellationToken {
    static NEVER: std::sync::LazyLock<CancellationToken> =
        std::sync::LazyLock::new(CancellationToken::new);
    &NEVER
}

/// What watches a call's cancellation after its context has gone to the handler: the token,
/// or the request channel that carries it.
pub(crate) struct Watch {
    pub(crate) token: Option<CancellationToken>,
    pub(crate) client: Option<Arc<dyn ClientChannel>>,
}

impl Watch {
    pub(crate) fn token(&self) -> &CancellationToken {
        self.token
            .as_ref()
            .or_else(|| self.client.as_ref().and_then(|c| c.cancellation()))
            .unwrap_or_else(|| never_cancelled())
    }
}

/// The future of a request to the client.
#[doc(hidden)]
pub type ClientRequestFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<serde_json::Value, AbilityError>> + Send + 'a>,
>;

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Answered; the content is there.
    Accept,
    /// Declined to answer.
    Decline,
    /// Dismissed the question.
    Cancel,
}

/// The user's answer to [`Context::elicit`](crate::Context::elicit).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct Elicitation {
    /// What the user did.
    pub action: ElicitAction,
    /// The answer, shaped by the requested schema, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
}

impl Elicitation {
    /// The user answered `content` (an object shaped by the requested schema).
    pub fn accept(content: serde_json::Value) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// The user declined to answer.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// The user dismissed the question.
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// The future a [`ClientChannel`] method returns.
#[doc(hidden)]
pub type ClientFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

#[derive(Clone)]
pub(crate) struct Client(pub(crate) Arc<dyn ClientChannel>);

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Client")
    }
}
