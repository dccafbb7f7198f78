//! An in-process MCP client: the real protocol over an in-memory pipe, so abilities are tested
//! the way clients call them, without spawning a process or opening a port.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::scripted::{Script, Scripted, UserQuestion};
use super::tap::Tap;
use crate::{Caller, Elicitation, Root, Server, ServerError};

/// A connected in-process client.
///
/// ```standalone_crate
/// use abilities::{Server, ability};
/// use serde_json::json;
///
/// /// Add two numbers.
/// #[ability(semantic = "READ")]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = Server::builder().build().unwrap().connect().await.unwrap();
/// let result = client.call("add", json!({"a": 2, "b": 40})).await.unwrap();
/// assert_eq!(result.structured_content, Some(json!({"result": 42})));
/// assert_eq!(result.is_error, Some(false));
/// # });
/// ```
pub struct TestClient {
    service: RunningService<RoleClient, Scripted>,
    scripted: Scripted,
    /// The answers as the server wrote them.
    tap: Tap,
    /// Its tasks are protocol 2025-11-25's (asked for with `params.task`).
    tasks_2025: bool,
}

impl Server {
    /// Connect an in-process client, as the local caller.
    pub async fn connect(&self) -> Result<TestClient, ServerError> {
        self.connect_as(None).await
    }

    /// Connect an in-process client whose requests come from `caller` (or the local caller).
    pub async fn connect_as(&self, caller: Option<Caller>) -> Result<TestClient, ServerError> {
        let mut client = self.test_client();
        client.caller = caller;
        client.connect().await
    }

    /// A test client to set up before it connects: who calls, the protocol version it
    /// speaks, and what it answers when the server asks (elicitation, sampling, roots). It
    /// declares exactly the capabilities it was given answers for.
    ///
    /// ```standalone_crate
    /// use abilities::client::Elicitation;
    /// use abilities::{AbilityError, Context, Server, ability};
    /// use serde_json::json;
    ///
    /// /// Greet someone by the name the user gives.
    /// #[ability(semantic = "READ")]
    /// async fn greet(ctx: &Context) -> Result<String, AbilityError> {
    ///     let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    ///     let answer = ctx.elicit("Your name?", schema).await?;
    ///     Ok(format!("Hello, {}", answer.content.unwrap_or_default()["name"]))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder().build().unwrap();
    /// let client = server
    ///     .test_client()
    ///     .answer_elicitation(|question| {
    ///         assert_eq!(question.message, "Your name?");
    ///         Elicitation::accept(json!({"name": "Ada"}))
    ///     })
    ///     .connect()
    ///     .await
    ///     .unwrap();
    /// let result = client.call("greet", json!({})).await.unwrap();
    /// assert_eq!(result.structured_content, Some(json!({"result": "Hello, \"Ada\""})));
    /// assert_eq!(client.requests()[0]["method"], "elicitation/create");
    /// # });
    /// ```
    pub fn test_client(&self) -> TestClientBuilder<'_> {
        TestClientBuilder {
            server: self,
            caller: None,
            version: None,
            script: Script::default(),
        }
    }
}

/// The `{code, message, details}` of a tool error (a result with `isError: true`), as the
/// server wrote it in the result's text; `None` for a result that is no error.
///
/// ```standalone_crate
/// use abilities::{AbilityError, Server, ability, testing::tool_error};
/// use serde_json::json;
///
/// /// Always refuses.
/// #[ability(semantic = "READ")]
/// fn refuse() -> Result<u8, AbilityError> {
///     Err(AbilityError::invalid("never"))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = Server::builder().build().unwrap().connect().await.unwrap();
/// let refused = client.call("refuse", json!({})).await.unwrap();
/// let error = tool_error(&refused).unwrap();
/// assert_eq!(error["message"], "never");
/// # });
/// ```
pub fn tool_error(result: &CallToolResult) -> Option<Value> {
    if result.is_error != Some(true) {
        return None;
    }
    result
        .content
        .iter()
        .find_map(|block| block.as_text())
        .and_then(|text| serde_json::from_str(&text.text).ok())
}

/// What a call that may become a task came back as ([`TestClient::start`]).
#[derive(Debug)]
pub enum Started {
    /// It answered in the request.
    Done(CallToolResult),
    /// It runs as the task with this id.
    Task(String),
}

/// A [`TestClient`] being set up ([`Server::test_client`]).
#[must_use = "a test client connects with `connect()`"]
pub struct TestClientBuilder<'s> {
    server: &'s Server,
    caller: Option<Caller>,
    version: Option<String>,
    script: Script,
}

impl TestClientBuilder<'_> {
    /// Call as `caller` (default: the local caller, who holds every scope unless the server's
    /// `local_scopes` says otherwise).
    pub fn caller(mut self, caller: Caller) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Speak protocol `version` (`"2025-06-18"`, `"2025-11-25"`, the default, or
    /// `"2026-07-28"`, where questions come back as rounds of `input_required`, answered by
    /// the same script).
    pub fn protocol_version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Answer every `elicitation/create` with what `answer` returns for its question (and
    /// declare elicitation).
    pub fn answer_elicitation(
        mut self,
        answer: impl Fn(&UserQuestion) -> Elicitation + Send + Sync + 'static,
    ) -> Self {
        self.script.elicit = Some(Box::new(answer));
        self
    }

    /// Answer every `sampling/createMessage` with what `answer` returns for its params: a
    /// `CreateMessageResult` as JSON (`role`, `content`, `model`), and declare sampling.
    pub fn answer_sampling(
        mut self,
        answer: impl Fn(&Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.script.sample = Some(Box::new(answer));
        self
    }

    /// Run calls of task abilities as background tasks ([`TestClient::start`]): on protocol
    /// 2025-11-25 that version's tasks (each call asks with `params.task`), on 2026-07-28 the
    /// tasks extension (declared; the server decides).
    pub fn tasks(mut self) -> Self {
        self.script.tasks = true;
        self
    }

    /// Share `roots` (`roots/list`), and declare roots.
    pub fn roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.script.roots = Some(roots.into_iter().collect());
        self
    }

    /// Connect over an in-memory pipe: `initialize` on 2025 versions, per-request metadata
    /// on 2026-07-28.
    pub async fn connect(self) -> Result<TestClient, ServerError> {
        let handler = match self.caller {
            Some(caller) => self.server.handler(Some(caller)),
            None => self.server.local_handler(),
        };
        // The server end is the one a stdio client meets: its own line transport.
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = self.server.clone();
        tokio::spawn(async move {
            let _ = server
                .serve_stream_with(handler, server_read, server_write)
                .await;
        });
        let tap = Tap::default();
        let client_io = tap.between(client_io);
        let tasks_2025 = self.script.tasks
            && self
                .version
                .as_deref()
                .unwrap_or(ProtocolVersion::V_2025_11_25.as_str())
                == ProtocolVersion::V_2025_11_25.as_str();
        let scripted = Scripted::new(self.script, self.version.as_deref());
        let failed = |e: &dyn std::fmt::Display| ServerError::Session(e.to_string());
        let service = if self.version.as_deref() == Some(ProtocolVersion::V_2026_07_28.as_str()) {
            let mode = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            scripted
                .clone()
                .serve_with_lifecycle(client_io, mode)
                .await
                .map_err(|e| failed(&e))?
        } else {
            scripted
                .clone()
                .serve(client_io)
                .await
                .map_err(|e| failed(&e))?
        };
        Ok(TestClient {
            service,
            scripted,
            tap,
            tasks_2025,
        })
    }
}

impl TestClient {
    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ServiceError> {
        self.service.list_all_tools().await
    }

    /// `tools/call` with JSON arguments (`null` for none).
    pub async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        self.service.call_tool(params).await
    }

    /// `tools/call` that may run as a background task (the client was set up with
    /// [`tasks`](TestClientBuilder::tasks)): the result, or the task's id. On 2025-11-25 the
    /// call asks for a task (`params.task`); on 2026-07-28 the server decides. One request:
    /// a call that asks the user before it becomes a task (2026-07-28 rounds) is
    /// `UnexpectedResponse` here; [`call`](Self::call) answers its rounds.
    pub async fn start(&self, name: &str, args: Value) -> Result<Started, ServiceError> {
        if self.tasks_2025 {
            let mut params = serde_json::json!({"name": name, "task": {}});
            if args.is_object() {
                params["arguments"] = args;
            }
            let created = self.as_written("tools/call", params).await?;
            return match created.pointer("/task/taskId").and_then(Value::as_str) {
                Some(id) => Ok(Started::Task(id.to_owned())),
                None => serde_json::from_value(created)
                    .map(Started::Done)
                    .map_err(|_| ServiceError::UnexpectedResponse),
            };
        }
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        match self.service.call_tool_once(params).await? {
            CallToolResponse::Complete(result) => Ok(Started::Done(result)),
            CallToolResponse::Task(created) => Ok(Started::Task(created.task.task_id)),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// `tasks/get`: the task `id` as the server reports it, as JSON: `taskId` and `status`
    /// in both versions; on 2026-07-28 its `result` or `error` once done, on 2025-11-25
    /// (where [`task_result`](Self::task_result) reads the result) `ttl` and `pollInterval`.
    pub async fn task(&self, id: &str) -> Result<Value, ServiceError> {
        if self.tasks_2025 {
            return self
                .as_written("tasks/get", serde_json::json!({ "taskId": id }))
                .await;
        }
        let params = serde_json::from_value(serde_json::json!({ "taskId": id }))
            .map_err(|_| ServiceError::UnexpectedResponse)?;
        let task = self.service.get_task(params).await?;
        serde_json::to_value(task).map_err(|_| ServiceError::UnexpectedResponse)
    }

    /// The task `id` once it has ended (`completed`, `failed` or `cancelled`), polled until
    /// then, for up to `wait`; `None` if it was still running.
    pub async fn finished_task(
        &self,
        id: &str,
        wait: Duration,
    ) -> Result<Option<Value>, ServiceError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let task = self.task(id).await?;
            if matches!(
                task["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            ) {
                return Ok(Some(task));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `tasks/cancel` of the task `id`.
    pub async fn cancel_task(&self, id: &str) -> Result<(), ServiceError> {
        if self.tasks_2025 {
            let params = serde_json::json!({ "taskId": id });
            return self.as_written("tasks/cancel", params).await.map(drop);
        }
        let params = serde_json::from_value(serde_json::json!({ "taskId": id }))
            .map_err(|_| ServiceError::UnexpectedResponse)?;
        self.service.cancel_task(params).await
    }

    /// The result of the task `id` once it has ended: on protocol 2025-11-25 its
    /// `tasks/result` (which waits for the end), on 2026-07-28 the `result` of its
    /// finished `tasks/get` (polled for up to `wait`). A task that failed or was cancelled
    /// is the error it ended with.
    pub async fn task_result(
        &self,
        id: &str,
        wait: Duration,
    ) -> Result<CallToolResult, ServiceError> {
        let result = if self.tasks_2025 {
            let ending = self.as_written("tasks/result", serde_json::json!({ "taskId": id }));
            tokio::time::timeout(wait, ending)
                .await
                .map_err(|_| ServiceError::Timeout { timeout: wait })??
        } else {
            let Some(task) = self.finished_task(id, wait).await? else {
                return Err(ServiceError::Timeout { timeout: wait });
            };
            match (task.get("result"), task.get("error")) {
                (Some(result), _) => result.clone(),
                (None, Some(error)) => {
                    let error = serde_json::from_value(error.clone())
                        .map_err(|_| ServiceError::UnexpectedResponse)?;
                    return Err(ServiceError::McpError(error));
                }
                (None, None) => return Err(ServiceError::UnexpectedResponse),
            }
        };
        serde_json::from_value(result).map_err(|_| ServiceError::UnexpectedResponse)
    }

    /// Send the request `method` with `params` and read its answer as the server wrote it
    /// (its `result`, or the JSON-RPC error).
    async fn as_written(&self, method: &str, params: Value) -> Result<Value, ServiceError> {
        let Value::Object(params) = params else {
            return Err(ServiceError::UnexpectedResponse);
        };
        let request = rmcp::model::ClientRequest::CustomRequest(rmcp::model::CustomRequest::new(
            method.to_owned(),
            Some(Value::Object(params)),
        ));
        let handle = self
            .service
            .peer()
            .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
            .await?;
        let id = match &handle.id {
            rmcp::model::NumberOrString::Number(n) => n.to_string(),
            rmcp::model::NumberOrString::String(s) => s.to_string(),
        };
        // The typed answer is discarded: the tap kept it as written before rmcp read it.
        let typed = handle.await_response().await;
        let written = self.tap.take(&id);
        match (written, typed) {
            (Some(mut written), _) => {
                if let Some(error) = written.get("error") {
                    let error = serde_json::from_value(error.clone())
                        .map_err(|_| ServiceError::UnexpectedResponse)?;
                    return Err(ServiceError::McpError(error));
                }
                Ok(written["result"].take())
            }
            (None, Err(error)) => Err(error),
            (None, Ok(_)) => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// The underlying `rmcp` client, for any other request.
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
    }

    /// Every request the server sent this client so far (`elicitation/create`,
    /// `sampling/createMessage`, `roots/list`), in order, each `{"method", "params"}`.
    pub fn requests(&self) -> Vec<Value> {
        self.scripted.requests()
    }

    /// Every notification the server sent this client so far (progress, log messages,
    /// resource updates, list changes...), in order, each `{"method", "params"}`.
    pub fn notifications(&self) -> Vec<Value> {
        self.scripted.notifications()
    }

    /// The params of every log message (`notifications/message`) heard so far.
    pub fn log_messages(&self) -> Vec<Value> {
        self.notifications()
            .into_iter()
            .filter(|n| n["method"] == "notifications/message")
            .map(|n| n["params"].clone())
            .collect()
    }

    /// The first notification of `method` heard, waiting for it up to `wait`; `None` if
    /// none came.
    pub async fn notification(&self, method: &str, wait: Duration) -> Option<Value> {
        self.scripted.notification(method, wait).await
    }

    /// Close the session.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
