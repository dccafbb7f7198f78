//! The protocol adapter: rmcp's [`ServerHandler`] over a [`Server`]'s snapshot. Each
//! request reads the snapshot once, maps the wire to a surface call and back, and never
//! holds a lock across an await.

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging and sampling deprecated (SEP-2577), but the protocol versions clients speak today have them"
)]

mod client;
mod idempotent;
pub(crate) mod input;
mod page;
mod tasks;
mod traced;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;

use crate::rpc::ToRpc;

use crate::Server;
use crate::ledger::{Holder, Session};
use crate::pipeline::Reporter;
use crate::resource::Subscriber;
use crate::server::{Inner, Listener, Lists, Snapshot};
use crate::surface::catalog;
use crate::{Caller, Context, LogLevel};
use client::{RequestClient, from_rmcp_level};
use input::{Asked, Detach, Pending, Rounds};

/// The `rmcp` [`ServerHandler`] of a [`Server`]: native tools over its registry. One per
/// session: it holds the session's log level.
#[derive(Clone)]
pub struct McpHandler {
    inner: Arc<Inner>,
    /// The view slot (surface) this handler presents.
    slot: usize,
    caller: Option<Caller>,
    log_level: Arc<AtomicU8>,
    /// Identifies the session's resource subscriptions and list-change listener.
    session: u64,
    /// The surface's name in the audit trail.
    via: &'static str,
}

impl McpHandler {
    pub(crate) fn new(inner: Arc<Inner>, slot: usize, caller: Option<Caller>) -> Self {
        let via = inner.snapshot().view(slot).surface.label();
        Self {
            via,
            inner,
            slot,
            caller,
            log_level: default_log_level(),
            session: next_session(),
        }
    }

    /// A handler for a new session: the same server and caller, a fresh log level and
    /// subscriptions.
    pub fn for_session(&self) -> Self {
        Self::new(Arc::clone(&self.inner), self.slot, self.caller.clone())
    }

    fn page_size(&self) -> usize {
        self.inner.page_size
    }
}

/// One page of a list result: `$items` ranked by `$ranks`, after the request's cursor.
macro_rules! paged {
    ($result:ident, $list:literal, $items:expr, $ranks:expr, $request:expr, $handler:expr) => {{
        let (items, next) = page::page(
            $list,
            &$items,
            &$ranks,
            cursor($request.as_ref()),
            $handler.page_size(),
        )?;
        let mut result = $result::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }};
}

impl Server {
    /// The `rmcp` handler for this server, for a transport of your own. `caller` is who every
    /// request comes from, or `None` to take it from the HTTP request.
    pub fn handler(&self, caller: Option<Caller>) -> McpHandler {
        McpHandler::new(Arc::clone(&self.inner), self.slot, caller)
    }

    /// The handler for local transports (stdio, in-process), as the configured local caller.
    pub(crate) fn local_handler(&self) -> McpHandler {
        self.handler(Some(self.inner.local_caller.clone()))
    }
}

/// A process-wide unique key for a session or a `subscriptions/listen` request.
pub(crate) fn next_session() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn unknown_resource(uri: &str) -> ErrorData {
    catalog::unknown_resource(uri).to_rpc()
}

fn default_log_level() -> Arc<AtomicU8> {
    Arc::new(AtomicU8::new(LogLevel::Info as u8))
}

impl McpHandler {
    /// Who holds the tokens and idempotency keys of `request`: its caller, or for an
    /// anonymous caller its session (when the transport keeps one) or its client.
    pub(super) fn holder(&self, request: &RequestContext<RoleServer>) -> Holder<'_> {
        let caller = self.caller(request);
        let session = if self.caller.is_some() {
            Session::Local(self.session)
        } else if self.inner.http.stateful && !client::is_stateless(request) {
            Session::Http(self.session)
        } else {
            Session::None
        };
        let client = request.meta.0.get("io.modelcontextprotocol/clientInfo");
        Holder::new(
            &self.inner.ledger,
            &self.inner.seal,
            &caller,
            session,
            client,
        )
    }

    /// The HTTP gate's reporter of what a call learns, when the request came through it.
    pub(super) fn reporter(request: &RequestContext<RoleServer>) -> Option<Reporter> {
        request
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Reporter>())
            .cloned()
    }

    pub(super) fn caller(&self, request: &RequestContext<RoleServer>) -> Caller {
        match &self.caller {
            Some(caller) => caller.clone(),
            None => request
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .cloned()
                .unwrap_or_else(Caller::anonymous),
        }
    }

    fn context(&self, request: RequestContext<RoleServer>) -> Context {
        let caller = self.caller(&request);
        self.context_as(caller, request, None, None)
    }

    pub(super) fn context_as(
        &self,
        caller: Caller,
        request: RequestContext<RoleServer>,
        rounds: Option<Arc<Rounds>>,
        task: Option<Detach>,
    ) -> Context {
        // The request (its id, version and token included) travels once, inside the client
        // channel, and is read from there only when asked for.
        let client = Arc::new(RequestClient::new(
            request,
            Arc::clone(&self.log_level),
            rounds,
            task,
        ));
        Context::for_request(
            caller,
            Arc::clone(&self.inner.state),
            self.inner.site.clone(),
            self.inner.timeout,
            client,
            self.via,
        )
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(self.inner.snapshot().capabilities.clone())
            .with_server_info(self.inner.info.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        if client::is_stateless(&context) && REMOVED.contains(&request.method.as_str()) {
            return Err(removed(&request.method));
        }
        Err(crate::rpc::untyped_request(&request.method, request.params))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // The lists this session was told can change: what the server declared to it.
        let capabilities = &self.inner.snapshot().capabilities;
        let offered = Lists {
            tools: capabilities.tools.is_some(),
            resources: capabilities.resources.is_some(),
            prompts: capabilities.prompts.is_some(),
        };
        self.inner
            .listeners
            .add(Listener::Session(self.session, context.peer, offered));
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let traced = self.span("tools/list", None, &context);
        traced
            .run(
                async move {
                    let snapshot = self.inner.snapshot();
                    let view = snapshot.view(self.slot);
                    paged!(
                        ListToolsResult,
                        "tools/list",
                        view.tools,
                        view.ranks,
                        request,
                        self
                    )
                },
                traced::never,
            )
            .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if client::is_stateless(&context) {
            return Err(removed("logging/setLevel"));
        }
        self.log_level
            .store(from_rmcp_level(request.level) as u8, Ordering::Relaxed);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.snapshot().view(self.slot).tool(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let traced = self.span("tools/call", Some(&request.name), &context);
        traced
            .run(
                async move {
                    match context.meta.0.get(crate::IDEMPOTENCY_META_KEY).cloned() {
                        None => self.call_tool_once(request, context, None).await,
                        Some(key) => Box::pin(self.call_idempotent(key, request, context)).await,
                    }
                },
                traced::tool_error,
            )
            .await
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let traced = self.span("tasks/get", None, &context);
        traced
            .run(
                async move {
                    let owner = self.caller(&context);
                    self.inner
                        .tasks
                        .get(&request.task_id, owner.principal())
                        .await
                },
                traced::never,
            )
            .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = self.span("tasks/update", None, &context);
        traced
            .run(
                async move {
                    let owner = self.caller(&context);
                    self.inner
                        .tasks
                        .update(&request.task_id, owner.principal(), request.input_responses)
                        .await
                },
                traced::never,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let traced = self.span("tasks/cancel", None, &context);
        traced
            .run(
                async move {
                    let owner = self.caller(&context);
                    self.inner
                        .tasks
                        .cancel(&request.task_id, owner.principal())
                        .await
                },
                traced::never,
            )
            .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let traced = self.span("resources/list", None, &context);
        traced
            .run(
                async move {
                    let snapshot = self.inner.snapshot();
                    let list = &snapshot.catalog.resources;
                    paged!(
                        ListResourcesResult,
                        "resources/list",
                        list.items,
                        list.ranks,
                        request,
                        self
                    )
                },
                traced::never,
            )
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let traced = self.span("resources/templates/list", None, &context);
        traced
            .run(
                async move {
                    let snapshot = self.inner.snapshot();
                    let list = &snapshot.catalog.templates;
                    paged!(
                        ListResourceTemplatesResult,
                        "resources/templates/list",
                        list.items,
                        list.ranks,
                        request,
                        self
                    )
                },
                traced::never,
            )
            .await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        let traced = self.span("skills/list", None, &context);
        traced
            .run(
                async move {
                    let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
                    self.inner.snapshot().skills.list(cursor)
                },
                traced::never,
            )
            .await
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        let traced = self.span("skills/get", None, &context);
        traced
            .run(
                async move { self.inner.snapshot().skills.get(&request.uri) },
                traced::never,
            )
            .await
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, ErrorData> {
        let traced = self.span("resources/directory/read", None, &context);
        traced
            .run(
                async move {
                    self.inner
                        .snapshot()
                        .skills
                        .directory(&request.uri, request.cursor.as_deref())
                },
                traced::never,
            )
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let traced = self.span("resources/read", None, &context);
        traced
            .run(
                async move {
                    // A skill's file: served as it was given, no ability runs.
                    if let Some(read) = self.inner.snapshot().skills.read(&request.uri) {
                        return Ok(read.into());
                    }
                    let (ctx, question) = self.asking_context(
                        context,
                        Asked {
                            method: "resources/read",
                            name: &request.uri,
                            arguments: &Value::Null,
                            state: request.request_state.as_deref(),
                            responses: request.input_responses,
                        },
                        None,
                    )?;
                    let snapshot = self.inner.snapshot();
                    let contents = snapshot
                        .catalog
                        .read(
                            &snapshot.registry,
                            ctx.with_via("resource"),
                            &self.inner.guards,
                            &request.uri,
                        )
                        .await;
                    if let Some(input) =
                        Pending::answer(question.as_ref(), &self.inner, contents.is_err())?
                    {
                        return Ok(input.into());
                    }
                    Ok(contents.map_err(|e| e.to_rpc())?.into())
                },
                traced::never,
            )
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let inner = &self.inner;
        if !resolves(&inner.snapshot(), &request.uri) {
            return Err(unknown_resource(&request.uri));
        }
        inner.notifier.subscribe(
            &request.uri,
            Subscriber::Session(self.session, context.peer),
        );
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.notifier.unsubscribe(&request.uri, self.session);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let snapshot = self.inner.snapshot();
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| resolves(&snapshot, uri))
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(uris);
        // Every list can change, so each one asked for is granted.
        accepted.tools_list_changed = requested.tools_list_changed.filter(|&on| on);
        accepted.resources_list_changed = requested.resources_list_changed.filter(|&on| on);
        accepted.prompts_list_changed = requested.prompts_list_changed.filter(|&on| on);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // A place among the streams the server holds, given back when this one ends.
        let _held = self
            .inner
            .streams
            .open(&self.caller(context.request_context()))?;
        let key = next_session();
        let (tasks, mut changes) = tokio::sync::mpsc::unbounded_channel();
        if let Some(ids) = tasks::listened(context.request_context()) {
            if !tasks::declared(context.request_context()) {
                return Err(tasks::required());
            }
            let owner = self.caller(context.request_context());
            self.inner
                .tasks
                .watch(&ids.0, owner.principal(), key, &tasks)
                .await;
        }
        drop(tasks);
        let uris: Vec<String> = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        for uri in &uris {
            self.inner
                .notifier
                .subscribe(uri, Subscriber::Listen(key, context.sink().clone()));
        }
        let accepted = context.accepted();
        let lists = Lists {
            tools: accepted.tools_list_changed == Some(true),
            resources: accepted.resources_list_changed == Some(true),
            prompts: accepted.prompts_list_changed == Some(true),
        };
        if lists != Lists::default() {
            self.inner
                .listeners
                .add(Listener::Listen(key, context.sink().clone(), lists));
        }
        // Whether the stream is cancelled or its future dropped, the subscriptions go.
        let _forget = Forget {
            inner: &self.inner,
            key,
            uris: &uris,
        };
        // Until the stream ends: the followed tasks' changes, as `notifications/tasks`.
        loop {
            tokio::select! {
                () = context.cancelled() => break,
                Some(task) = changes.recv() => tasks::notify(context.request_context(), task).await,
            }
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let traced = self.span("prompts/list", None, &context);
        traced
            .run(
                async move {
                    let snapshot = self.inner.snapshot();
                    let list = &snapshot.catalog.prompts;
                    paged!(
                        ListPromptsResult,
                        "prompts/list",
                        list.items,
                        list.ranks,
                        request,
                        self
                    )
                },
                traced::never,
            )
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let traced = self.span("prompts/get", Some(&request.name), &context);
        traced
            .run(
                async move {
                    // The arguments bind a multi-round state: copied only on a protocol that has one.
                    let arguments = match &request.arguments {
                        Some(arguments) if client::is_stateless(&context) => {
                            Value::Object(arguments.clone())
                        }
                        _ => Value::Null,
                    };
                    let (ctx, question) = self.asking_context(
                        context,
                        Asked {
                            method: "prompts/get",
                            name: &request.name,
                            arguments: &arguments,
                            state: request.request_state.as_deref(),
                            responses: request.input_responses,
                        },
                        None,
                    )?;
                    let snapshot = self.inner.snapshot();
                    let prompt = snapshot
                        .catalog
                        .get_prompt(
                            &snapshot.registry,
                            ctx.with_via("prompt"),
                            &self.inner.guards,
                            &request.name,
                            request.arguments,
                        )
                        .await;
                    if let Some(input) =
                        Pending::answer(question.as_ref(), &self.inner, prompt.is_err())?
                    {
                        return Ok(input.into());
                    }
                    Ok(prompt.map_err(|e| e.to_rpc())?.into())
                },
                traced::never,
            )
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let traced = self.span("completion/complete", None, &context);
        traced
            .run(
                async move {
                    let snapshot = self.inner.snapshot();
                    snapshot
                        .catalog
                        .complete_reference(
                            &snapshot.registry,
                            &self.context(context),
                            &request.r#ref,
                            &request.argument.name,
                            &request.argument.value,
                        )
                        .map_err(|e| e.to_rpc())
                },
                traced::never,
            )
            .await
    }
}

/// Methods protocol 2026-07-28 removed (no initialization, no sessions): a request of that
/// version naming one is answered "method not found", as for any unknown method. rmcp does
/// so itself for well-formed `ping` and `resources/(un)subscribe`; these reach the adapter
/// when their params do not parse, and `logging/setLevel` is refused by its handler.
pub(crate) const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

pub(crate) fn removed(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method} is not part of protocol 2026-07-28"),
        None,
    )
}

/// Forgets a `subscriptions/listen` stream's subscriptions when it ends.
struct Forget<'a> {
    inner: &'a Inner,
    key: u64,
    uris: &'a [String],
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        for uri in self.uris {
            self.inner.notifier.unsubscribe(uri, self.key);
        }
        self.inner.listeners.remove(self.key);
        self.inner.tasks.forget(self.key);
    }
}

/// The cursor of a list request, if it has one.
fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|r| r.cursor.as_deref())
}

/// Whether some resource ability serves `uri`.
fn resolves(snapshot: &Snapshot, uri: &str) -> bool {
    snapshot.skills.serves(uri) || snapshot.catalog.resolve(&snapshot.registry, uri).is_some()
}
