//! The bridge as a client of an upstream: what the upstream sends back during a call
//! (progress, log messages, questions for the user or the model) goes to the downstream
//! call it belongs to; list changes re-list the upstream.

#![allow(
    deprecated,
    reason = "rmcp marks sampling and logging deprecated (SEP-2577), but upstreams of today's protocol versions use them"
)]

use std::sync::Weak;

use abilities::{
    AbilityError, ErrorCode,
    client::{ElicitAction, LogLevel},
};
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorData, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use serde_json::Value;

use crate::upstream::{Call, Upstream};

/// The client side of one upstream connection.
pub(crate) struct Relay {
    upstream: Weak<Upstream>,
    info: ClientConfig,
}

impl Relay {
    pub(crate) fn new(upstream: Weak<Upstream>, info: ClientConfig) -> Self {
        Self { upstream, info }
    }

    /// The call an upstream's request belongs to, or the error the upstream is answered
    /// with.
    fn call_for(&self, what: &str) -> Result<std::sync::Arc<Call>, ErrorData> {
        let upstream = self
            .upstream
            .upgrade()
            .ok_or_else(|| ErrorData::internal_error("the bridge is shutting down", None))?;
        upstream.sole_call().map_err(|calls| {
            let why = if calls == 0 {
                format!("{what} outside a tool call has no user to ask")
            } else {
                format!(
                    "{what} with {calls} calls in flight: the bridge cannot tell which call's user to ask"
                )
            };
            tracing::warn!(server = %upstream.name, "{why}");
            ErrorData::invalid_request(why, None)
        })
    }
}

/// What the downstream client's refusal tells the upstream; a question this round cannot
/// answer (a missing capability, input asked for by a 2026-07-28 client) also ends the call
/// with that error.
fn refused(call: &Call, error: AbilityError) -> ErrorData {
    let message = error.message().to_owned();
    if matches!(
        error.code(),
        ErrorCode::ClientCapabilityMissing | ErrorCode::InputRequired
    ) {
        call.abort(error);
    }
    ErrorData::invalid_request(message, None)
}

fn level(level: LoggingLevel) -> LogLevel {
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

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let call = self.call_for("elicitation")?;
        let (message, schema) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                serde_json::to_value(requested_schema).unwrap_or(Value::Null),
            ),
            _ => {
                return Err(ErrorData::invalid_request(
                    "the bridge relays form elicitation only",
                    None,
                ));
            }
        };
        // The upstream may give up on its question: then the downstream one is dropped too.
        let asked = tokio::select! {
            asked = call.ctx.elicit(&message, schema) => asked,
            () = context.ct.cancelled() => return Err(ErrorData::internal_error("the upstream cancelled its question", None)),
        };
        match asked {
            Ok(answer) => {
                let action = match answer.action {
                    ElicitAction::Accept => "accept",
                    ElicitAction::Decline => "decline",
                    ElicitAction::Cancel => "cancel",
                };
                serde_json::from_value(
                    serde_json::json!({"action": action, "content": answer.content}),
                )
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))
            }
            Err(error) => Err(refused(&call, error)),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let call = self.call_for("sampling")?;
        let mut params = serde_json::to_value(params).unwrap_or(Value::Null);
        if let Some(map) = params.as_object_mut() {
            map.remove("_meta");
        }
        let asked = tokio::select! {
            asked = call.ctx.sample(params) => asked,
            () = context.ct.cancelled() => return Err(ErrorData::internal_error("the upstream cancelled its request", None)),
        };
        match asked {
            Ok(result) => serde_json::from_value(result).map_err(|e| {
                ErrorData::internal_error(format!("the client's sampling answer: {e}"), None)
            }),
            Err(error) => Err(refused(&call, error)),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(upstream) = self.upstream.upgrade() else {
            return;
        };
        if let Some(call) = upstream.call_by_token(&params.progress_token) {
            call.ctx
                .progress(params.progress, params.total, params.message.as_deref())
                .await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(upstream) = self.upstream.upgrade() else {
            return;
        };
        tracing::debug!(server = %upstream.name, logger = ?params.logger, data = %params.data, "upstream log");
        if let Ok(call) = upstream.sole_call() {
            call.ctx.log(level(params.level), params.data).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(upstream) = self.upstream.upgrade() {
            upstream
                .server
                .resource_notifier()
                .updated(&params.uri)
                .await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist();
    }
}

impl Relay {
    fn relist(&self) {
        if let Some(upstream) = self.upstream.upgrade() {
            upstream.relist.notify_one();
        }
    }
}
