//! The client side of a [`TestClient`](super::client::TestClient): it answers what the server
//! asks (elicitation, sampling, roots) as the test scripted, declares exactly the
//! capabilities it can answer for, and keeps every request and notification it heard.
#![allow(
    deprecated,
    reason = "a test client answers sampling and roots and hears log messages, which protocol 2026-07-28 deprecates (SEP-2577) and 2025 clients still use"
)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, CustomNotification,
    ElicitRequestParams, ElicitResult, ErrorData, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::{Elicitation, Root};

/// A question the server asked the test client's user (`elicitation/create`).
#[derive(Clone, Debug, PartialEq)]
pub struct UserQuestion {
    /// What the user is asked.
    pub message: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
}

type Elicit = dyn Fn(&UserQuestion) -> Elicitation + Send + Sync;
type Sample = dyn Fn(&Value) -> Value + Send + Sync;

/// What the test scripted the client to answer; `None`: the client cannot answer that
/// (and does not declare it).
#[derive(Default)]
pub(super) struct Script {
    pub(super) elicit: Option<Box<Elicit>>,
    pub(super) sample: Option<Box<Sample>>,
    pub(super) roots: Option<Vec<Root>>,
    /// Declare the tasks extension (protocol 2026-07-28): the server may answer a call with
    /// a task.
    pub(super) tasks: bool,
}

/// What the client heard: the server's requests and notifications, in order, each as
/// `{"method", "params"}`.
#[derive(Default)]
struct Heard {
    asked: Vec<Value>,
    notifications: Vec<Value>,
}

/// The test client's handler.
#[derive(Clone)]
pub(crate) struct Scripted {
    script: Arc<Script>,
    heard: Arc<Mutex<Heard>>,
    arrived: Arc<Notify>,
    config: ClientConfig,
}

impl Scripted {
    /// A client of `version` answering as `script` says.
    pub(super) fn new(script: Script, version: Option<&str>) -> Self {
        let mut config = serde_json::to_value(ClientConfig::default()).unwrap_or(Value::Null);
        if let Some(version) = version {
            config["protocolVersion"] = json!(version);
        }
        let mut capabilities = serde_json::Map::new();
        if script.elicit.is_some() {
            capabilities.insert("elicitation".into(), json!({}));
        }
        if script.sample.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if script.roots.is_some() {
            capabilities.insert("roots".into(), json!({}));
        }
        // Protocol 2025-11-25 has tasks of its own, asked for per call (`params.task`).
        let own_tasks = version.is_none_or(|v| v == "2025-11-25");
        if script.tasks && !own_tasks {
            capabilities.insert(
                "extensions".into(),
                json!({ rmcp::model::TASKS_EXTENSION_ID: {} }),
            );
        }
        config["capabilities"] = Value::Object(capabilities);
        let config = serde_json::from_value(config).unwrap_or_default();
        Self {
            script: Arc::new(script),
            heard: Arc::default(),
            arrived: Arc::new(Notify::new()),
            config,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Heard> {
        self.heard.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn asked(&self, method: &str, params: Value) {
        self.lock()
            .asked
            .push(json!({"method": method, "params": params}));
    }

    /// `params` with the request's `_meta` (rmcp reads it apart), as it was sent.
    fn with_meta(mut params: Value, context: &RequestContext<RoleClient>) -> Value {
        if !context.meta.0.is_empty()
            && let Value::Object(params) = &mut params
        {
            params.insert("_meta".into(), params_of(&context.meta));
        }
        params
    }

    fn notified(&self, method: &str, params: Value) {
        self.lock()
            .notifications
            .push(json!({"method": method, "params": params}));
        self.arrived.notify_waiters();
    }

    /// Every request the server sent this client, in order.
    pub(super) fn requests(&self) -> Vec<Value> {
        self.lock().asked.clone()
    }

    /// Every notification the server sent this client, in order.
    pub(super) fn notifications(&self) -> Vec<Value> {
        self.lock().notifications.clone()
    }

    /// The first notification of `method` heard (now, or within `wait`).
    pub(super) async fn notification(&self, method: &str, wait: Duration) -> Option<Value> {
        let found = || {
            self.lock()
                .notifications
                .iter()
                .find(|n| n["method"] == method)
                .cloned()
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let arrived = self.arrived.notified();
            if let Some(found) = found() {
                return Some(found);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return found();
            }
        }
    }
}

fn params_of(params: &impl serde::Serialize) -> Value {
    serde_json::to_value(params).unwrap_or(Value::Null)
}

/// A scripted answer that does not fit the protocol's result type.
fn not_a_result(what: &str, error: &serde_json::Error) -> ErrorData {
    ErrorData::internal_error(
        format!("the test's {what} answer is not valid: {error}"),
        None,
    )
}

impl ClientHandler for Scripted {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let params = params_of(&request);
        self.asked(
            "elicitation/create",
            Self::with_meta(params.clone(), &context),
        );
        let Some(answer) = &self.script.elicit else {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ElicitationCreateRequestMethod,
            >());
        };
        let question = UserQuestion {
            message: params["message"].as_str().unwrap_or_default().to_owned(),
            schema: params["requestedSchema"].clone(),
        };
        let answer = params_of(&answer(&question));
        serde_json::from_value(answer).map_err(|e| not_a_result("elicitation", &e))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let params = params_of(&params);
        self.asked(
            "sampling/createMessage",
            Self::with_meta(params.clone(), &context),
        );
        let Some(answer) = &self.script.sample else {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >());
        };
        serde_json::from_value(answer(&params)).map_err(|e| not_a_result("sampling", &e))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.asked("roots/list", json!({}));
        let roots = self.script.roots.clone().unwrap_or_default();
        serde_json::from_value(json!({ "roots": roots })).map_err(|e| not_a_result("roots", &e))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.notified("notifications/progress", params_of(&params));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.notified("notifications/message", params_of(&params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.notified("notifications/resources/updated", params_of(&params));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.notified("notifications/tools/list_changed", json!({}));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.notified("notifications/resources/list_changed", json!({}));
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.notified("notifications/prompts/list_changed", json!({}));
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        let params = notification.params.clone().unwrap_or(Value::Null);
        self.notified(&notification.method, params);
    }
}
