//! The way back to a request's client: progress and log notifications, elicitation and
//! sampling requests, for handlers that ask through their [`Context`](crate::Context).

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging and sampling deprecated (SEP-2577), but the protocol versions clients speak today have them"
)]

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, LoggingMessageNotification, LoggingMessageNotificationParam,
    NumberOrString, ProgressNotificationParam, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::input::{Needed, Rounds};
use super::kept::Kept;
use super::level::{from_rmcp_level, to_rmcp_level};
use crate::context::{ClientFuture, ClientRequestFuture};
use crate::question::Question;
use crate::task::{Live, Slot};
use crate::{AbilityError, ClientChannel, ErrorCode, LogLevel};

/// Progress and log notifications of one request, back to its client. It keeps the request
/// context and reads the progress token and client capabilities from it only when a handler
/// needs them, so calls that never talk back pay nothing for them.
/// In a request's extensions: the protocol 2025-11-25 task its call runs as (its questions
/// go to the session, marked as the task's).
#[derive(Clone)]
pub(super) struct RelatedTask(pub(super) Arc<Live>);

pub(super) struct RequestClient {
    request: RequestContext<RoleServer>,
    log_level: Arc<AtomicU8>,
    /// A numeric request id as text, made when first asked for.
    id: OnceLock<String>,
    /// The request's protocol version, read when first asked for.
    version: OnceLock<Option<Cow<'static, str>>>,
    /// On protocol 2026-07-28, where the questions go instead of requests to the client.
    rounds: Option<Arc<Rounds>>,
    /// Once the call runs on as a background task, its task: questions wait for
    /// `tasks/update`, progress becomes the task's status message.
    task: Option<Arc<Slot>>,
    /// How many questions without a key of their own were asked: the next one's number.
    asked: AtomicUsize,
    /// Where the session is kept for other replicas: its log messages go to the replica
    /// holding its `GET` stream.
    kept: Option<Arc<Kept>>,
}

impl RequestClient {
    pub(super) fn new(
        request: RequestContext<RoleServer>,
        log_level: Arc<AtomicU8>,
        rounds: Option<Arc<Rounds>>,
        task: Option<Arc<Slot>>,
    ) -> Self {
        Self {
            request,
            log_level,
            id: OnceLock::new(),
            version: OnceLock::new(),
            rounds,
            task,
            asked: AtomicUsize::new(0),
            kept: None,
        }
    }

    /// This client channel, in a session kept in `kept` for the other replicas.
    pub(super) fn keeping(mut self, kept: Option<&Arc<Kept>>) -> Self {
        self.kept = kept.cloned();
        self
    }

    fn task(&self) -> Option<&Arc<Live>> {
        self.task.as_ref().and_then(|t| t.live())
    }

    /// Ask the client `method`: a request to it on protocol versions that have them, else a
    /// question of this round (see [`Rounds`]).
    async fn ask<P, R>(
        &self,
        key: Option<&str>,
        method: &str,
        declared: bool,
        capability: Needed,
        value: Value,
        send: impl AsyncFnOnce(&rmcp::Peer<RoleServer>, P) -> Result<R, rmcp::service::ServiceError>,
    ) -> Result<Value, AbilityError>
    where
        P: serde::de::DeserializeOwned,
        R: serde::Serialize,
    {
        let deprecated = capability.deprecated().filter(|_| self.multi_round());
        if let Some(instead) = deprecated {
            warn_deprecated(capability, instead);
        }
        if !declared {
            if let Some(rounds) = &self.rounds {
                rounds.missing(capability);
            }
            let error = Self::missing(capability);
            return Err(match deprecated {
                Some(instead) => AbilityError::new(
                    ErrorCode::ClientCapabilityMissing,
                    format!(
                        "{}; {} is deprecated in protocol 2026-07-28 (SEP-2577), which this \
                         request speaks: {instead}",
                        error.message(),
                        capability.name()
                    ),
                ),
                None => error,
            });
        }
        if self.task().is_none() && self.rounds.is_none() {
            // A protocol version with requests to the client: ask it.
            let Some(RelatedTask(live)) = self.request.extensions.get::<RelatedTask>() else {
                return self.send(method, value, send).await;
            };
            // A protocol 2025-11-25 task asks its session, the request marked as the task's;
            // the task waits in `input_required` meanwhile.
            let key = self.next_key(key, method);
            let question = Question::new(method, value.clone())?;
            let mut value = value;
            if let Value::Object(params) = &mut value {
                let meta = params
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(
                        crate::task::wire_2025::RELATED_TASK.into(),
                        serde_json::json!({ "taskId": live.id() }),
                    );
                }
            }
            return live
                .asking_session(key, question, self.send(method, value, send))
                .await;
        }
        // Else a question of this round, or of the task the call became: keyed in asking
        // order, one count for both, so keys never repeat.
        {
            let key = self.next_key(key, method);
            let question = Question::new(method, value)?;
            if let Some(task) = self.task() {
                return task.ask(key, question).await;
            }
            match (self.task(), &self.rounds) {
                (Some(task), _) => task.ask(key, question).await,
                (None, Some(rounds)) => rounds.ask(key, question),
                (None, None) => Err(AbilityError::internal("no way to ask the client")),
            }
        }
    }

    /// The key of a question: its own, or the next in asking order (one count for every
    /// question of the call, so keys never repeat).
    fn next_key(&self, key: Option<&str>, method: &str) -> String {
        match key {
            Some(key) => key.to_owned(),
            None => {
                let kind = method.split('/').next().unwrap_or(method);
                format!("{kind}-{}", self.asked.fetch_add(1, Ordering::Relaxed))
            }
        }
    }

    /// Send the request `method` to the client, and its result as JSON.
    async fn send<P, R>(
        &self,
        method: &str,
        value: Value,
        send: impl AsyncFnOnce(&rmcp::Peer<RoleServer>, P) -> Result<R, rmcp::service::ServiceError>,
    ) -> Result<Value, AbilityError>
    where
        P: serde::de::DeserializeOwned,
        R: serde::Serialize,
    {
        let request = params::<P>(method, value)?;
        let result = send(&self.request.peer, request)
            .await
            .map_err(|e| client_error(method, &e))?;
        serde_json::to_value(result).map_err(|e| AbilityError::internal(e.to_string()))
    }

    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.request.client_capabilities()
    }

    /// Whether the request is of a protocol version without sessions (2026-07-28 on).
    fn multi_round(&self) -> bool {
        self.rounds.is_some() || is_stateless(&self.request)
    }

    fn missing(capability: Needed) -> AbilityError {
        AbilityError::new(
            ErrorCode::ClientCapabilityMissing,
            format!(
                "the client did not declare the {} capability",
                capability.name()
            ),
        )
    }
}

/// Say once per process and feature that a handler asks for `capability`, which protocol
/// 2026-07-28 deprecates (SEP-2577 asks implementations to warn where it is used).
fn warn_deprecated(capability: Needed, instead: &str) {
    static WARNED: [std::sync::atomic::AtomicBool; 2] = [
        std::sync::atomic::AtomicBool::new(false),
        std::sync::atomic::AtomicBool::new(false),
    ];
    let slot = match capability {
        Needed::Sampling => &WARNED[0],
        Needed::Roots => &WARNED[1],
        Needed::Elicitation => return,
    };
    if !slot.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            capability = capability.name(),
            "a handler asks the client for {}, which protocol 2026-07-28 deprecates (SEP-2577): \
             {instead}",
            capability.name()
        );
    }
}

/// Say once per process that log messages go to a client of protocol 2026-07-28, which
/// deprecates them (SEP-2577).
fn warn_deprecated_logging() {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "log messages to the client (notifications/message) are deprecated in protocol \
             2026-07-28 (SEP-2577): log to stderr, or trace with OpenTelemetry"
        );
    }
}

/// Whether `request` is of a protocol version without sessions, initialization or requests
/// to the client (2026-07-28 on).
pub(super) fn is_stateless(request: &RequestContext<RoleServer>) -> bool {
    // Read in place (versions are dates, so they compare as text): this runs on every call.
    let first = ProtocolVersion::V_2026_07_28;
    match request
        .meta
        .0
        .get("io.modelcontextprotocol/protocolVersion")
    {
        Some(Value::String(version)) => version.as_str() >= first.as_str(),
        Some(_) => false,
        None => request
            .peer
            .peer_info()
            .is_some_and(|info| info.protocol_version.as_str() >= first.as_str()),
    }
}

/// Typed params from JSON, or the reason they are not valid.
fn params<T: serde::de::DeserializeOwned>(method: &str, value: Value) -> Result<T, AbilityError> {
    serde_json::from_value(value)
        .map_err(|e| AbilityError::internal(format!("invalid {method} request: {e}")))
}

fn client_error(method: &str, error: &rmcp::service::ServiceError) -> AbilityError {
    AbilityError::new(
        ErrorCode::ExecutionFailed,
        format!("the client failed {method}: {error}"),
    )
}

impl ClientChannel for RequestClient {
    fn background(&self) -> ClientFuture<'_> {
        match &self.task {
            // A call that may become a task waits until it is one (it becomes one once it
            // waits, and then it is polled again).
            Some(task) => Box::pin(std::future::poll_fn(move |_| match task.live() {
                Some(_) => std::task::Poll::Ready(()),
                None => std::task::Poll::Pending,
            })),
            None => Box::pin(tokio::task::yield_now()),
        }
    }

    fn cancellation(&self) -> Option<&tokio_util::sync::CancellationToken> {
        Some(&self.request.ct)
    }

    fn request_id(&self) -> Option<&str> {
        Some(match &self.request.id {
            NumberOrString::String(id) => id,
            NumberOrString::Number(n) => self.id.get_or_init(|| n.to_string()),
        })
    }

    fn sealed_answer(&self) -> Option<String> {
        // A task's questions are answered by `tasks/update`, once each.
        if self.task().is_some() {
            return None;
        }
        self.rounds.as_ref().and_then(|rounds| rounds.last_sealed())
    }

    fn protocol_version(&self) -> Option<&str> {
        self.version
            .get_or_init(|| {
                self.request
                    .protocol_version()
                    .map(|version| known_version(version.as_str()))
            })
            .as_deref()
    }

    fn can_elicit(&self) -> bool {
        self.capabilities().is_some_and(|c| c.elicitation.is_some())
    }

    fn can_sample(&self) -> bool {
        self.capabilities().is_some_and(|c| c.sampling.is_some())
    }

    fn can_list_roots(&self) -> bool {
        self.capabilities().is_some_and(|c| c.roots.is_some())
    }

    fn elicit<'a>(&'a self, key: Option<&'a str>, value: Value) -> ClientRequestFuture<'a> {
        Box::pin(async move {
            let declared = self.capabilities().is_some_and(|c| c.elicitation.is_some());
            self.ask(
                key,
                "elicitation/create",
                declared,
                Needed::Elicitation,
                value,
                async |peer, request: ElicitRequestParams| {
                    // rmcp's `create_elicitation` needs its `elicitation` feature, which brings
                    // URL parsing (`url`, `idna`) for URL-mode elicitation this never sends.
                    match peer
                        .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(request)))
                        .await?
                    {
                        ClientResult::ElicitResult(result) => Ok(result),
                        _ => Err(rmcp::service::ServiceError::UnexpectedResponse),
                    }
                },
            )
            .await
        })
    }

    fn sample<'a>(&'a self, key: Option<&'a str>, value: Value) -> ClientRequestFuture<'a> {
        Box::pin(async move {
            let declared = self.capabilities().is_some_and(|c| c.sampling.is_some());
            self.ask(
                key,
                "sampling/createMessage",
                declared,
                Needed::Sampling,
                value,
                async |peer, request: CreateMessageRequestParams| {
                    peer.create_message(request).await
                },
            )
            .await
        })
    }

    fn list_roots<'a>(&'a self, key: Option<&'a str>) -> ClientRequestFuture<'a> {
        Box::pin(async move {
            let declared = self.capabilities().is_some_and(|c| c.roots.is_some());
            self.ask(
                key,
                "roots/list",
                declared,
                Needed::Roots,
                Value::Object(serde_json::Map::new()),
                async |peer, _: serde::de::IgnoredAny| peer.list_roots().await,
            )
            .await
        })
    }

    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> ClientFuture<'_> {
        Box::pin(async move {
            if let Some(slot) = &self.task {
                match slot.live() {
                    Some(task) => return task.progress(progress, total, message).await,
                    None => slot.early_progress(progress, total, message.clone()),
                }
            }
            let Some(token) = self.request.meta.get_progress_token() else {
                return;
            };
            let mut params = ProgressNotificationParam::new(token, progress);
            params.total = total;
            params.message = message;
            if let Err(error) = self.request.peer.notify_progress(params).await {
                tracing::debug!(%error, "a progress notification was not sent");
            }
        })
    }

    fn log(&self, level: LogLevel, logger: Option<String>, data: Value) -> ClientFuture<'_> {
        Box::pin(async move {
            // A task has no stream to log to: its request has been answered.
            if self.task().is_some() {
                return;
            }
            // On protocol 2026-07-28 a request that sets no `logLevel` gets no log messages.
            let least = if self.multi_round() {
                match self.request.meta.log_level() {
                    Some(level) => {
                        warn_deprecated_logging();
                        from_rmcp_level(level) as u8
                    }
                    None => return,
                }
            } else {
                self.log_level.load(Ordering::Relaxed)
            };
            if (level as u8) < least {
                return;
            }
            let mut params = LoggingMessageNotificationParam::new(to_rmcp_level(level), data);
            params.logger = logger;
            // A log message goes into the session's stream, which the replica holding its
            // `GET` stream sends (a client resumes it on any replica).
            if let Some(kept) = &self.kept
                && let Some(session) = super::kept_session(&self.request.extensions)
            {
                let note = ServerNotification::LoggingMessageNotification(
                    LoggingMessageNotification::new(params),
                );
                if let Err(error) = kept.notify(&session, note).await {
                    tracing::debug!(%error, "a log notification was not sent");
                }
                return;
            }
            let sent = self.request.peer.notify_logging_message(params).await;
            if let Err(error) = sent {
                tracing::debug!(%error, "a log notification was not sent");
            }
        })
    }
}

/// A protocol version, without an allocation for the known ones.
fn known_version(version: &str) -> Cow<'static, str> {
    const KNOWN: [&str; 5] = [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ];
    KNOWN
        .iter()
        .find(|k| **k == version)
        .map_or_else(|| Cow::Owned(version.to_owned()), |k| Cow::Borrowed(*k))
}
