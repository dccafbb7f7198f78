//! The way back to a request's client: progress and log notifications, elicitation and
//! sampling requests, for handlers that ask through their [`Context`](crate::Context).

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging and sampling deprecated (SEP-2577), but the protocol versions clients speak today have them"
)]

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams, LoggingLevel,
    LoggingMessageNotificationParam, NumberOrString, ProgressNotificationParam,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::context::{ClientFuture, ClientRequestFuture};
use crate::{AbilityError, ClientChannel, ErrorCode, LogLevel};

/// Progress and log notifications of one request, back to its client. It keeps the request
/// context and reads the progress token and client capabilities from it only when a handler
/// needs them, so calls that never talk back pay nothing for them.
pub(super) struct RequestClient {
    request: RequestContext<RoleServer>,
    log_level: Arc<AtomicU8>,
    /// A numeric request id as text, made when first asked for.
    id: OnceLock<String>,
    /// The request's protocol version, read when first asked for.
    version: OnceLock<Option<Cow<'static, str>>>,
}

impl RequestClient {
    pub(super) fn new(request: RequestContext<RoleServer>, log_level: Arc<AtomicU8>) -> Self {
        Self {
            request,
            log_level,
            id: OnceLock::new(),
            version: OnceLock::new(),
        }
    }

    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.request.client_capabilities()
    }

    fn missing(capability: &str) -> AbilityError {
        AbilityError::new(
            ErrorCode::ClientCapabilityMissing,
            format!("the client did not declare the {capability} capability"),
        )
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
    fn cancellation(&self) -> Option<&tokio_util::sync::CancellationToken> {
        Some(&self.request.ct)
    }

    fn request_id(&self) -> Option<&str> {
        Some(match &self.request.id {
            NumberOrString::String(id) => id,
            NumberOrString::Number(n) => self.id.get_or_init(|| n.to_string()),
        })
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

    fn elicit(&self, value: Value) -> ClientRequestFuture<'_> {
        Box::pin(async move {
            if self
                .capabilities()
                .as_ref()
                .is_none_or(|c| c.elicitation.is_none())
            {
                return Err(Self::missing("elicitation"));
            }
            let request = params::<ElicitRequestParams>("elicitation/create", value)?;
            let result = self
                .request
                .peer
                .create_elicitation(request)
                .await
                .map_err(|e| client_error("elicitation/create", &e))?;
            serde_json::to_value(result).map_err(|e| AbilityError::internal(e.to_string()))
        })
    }

    fn sample(&self, value: Value) -> ClientRequestFuture<'_> {
        Box::pin(async move {
            if self
                .capabilities()
                .as_ref()
                .is_none_or(|c| c.sampling.is_none())
            {
                return Err(Self::missing("sampling"));
            }
            let request = params::<CreateMessageRequestParams>("sampling/createMessage", value)?;
            let result = self
                .request
                .peer
                .create_message(request)
                .await
                .map_err(|e| client_error("sampling/createMessage", &e))?;
            serde_json::to_value(result).map_err(|e| AbilityError::internal(e.to_string()))
        })
    }

    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> ClientFuture<'_> {
        Box::pin(async move {
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
            if (level as u8) < self.log_level.load(Ordering::Relaxed) {
                return;
            }
            let mut params = LoggingMessageNotificationParam::new(to_rmcp_level(level), data);
            params.logger = logger;
            let sent = self.request.peer.notify_logging_message(params).await;
            if let Err(error) = sent {
                tracing::debug!(%error, "a log notification was not sent");
            }
        })
    }
}

fn to_rmcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

pub(super) fn from_rmcp_level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
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
