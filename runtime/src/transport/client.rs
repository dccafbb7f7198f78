//! An in-process MCP client: the real protocol over an in-memory pipe, so abilities are tested
//! the way clients call them, without spawning a process or opening a port.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::scripted::{Script, Scripted, UserQuestion};
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

    /// Declare the tasks extension, so the server may run a call of a task ability as a
    /// background task ([`TestClient::start`]); with protocol version `"2026-07-28"`.
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
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
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
        Ok(TestClient { service, scripted })
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

    /// `tools/call` where the server may answer with a background task (the client declared
    /// [`tasks`](TestClientBuilder::tasks)): the result, or the task's id. One request: a
    /// call that asks the user before it becomes a task (2026-07-28 rounds) is
    /// `UnexpectedResponse` here; [`call`](Self::call) answers its rounds.
    pub async fn start(&self, name: &str, args: Value) -> Result<Started, ServiceError> {
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

    /// `tasks/get`: the task `id` as the server reports it (`taskId`, `status`, and once done
    /// its `result` or `error`), as JSON.
    pub async fn task(&self, id: &str) -> Result<Value, ServiceError> {
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
        let params = serde_json::from_value(serde_json::json!({ "taskId": id }))
            .map_err(|_| ServiceError::UnexpectedResponse)?;
        self.service.cancel_task(params).await
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
