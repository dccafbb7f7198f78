//! The protocol adapter: rmcp's [`ServerHandler`] over a [`Server`]'s snapshot. Each
//! request reads the snapshot once, maps the wire to a surface call and back, and never
//! holds a lock across an await.

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging and sampling deprecated (SEP-2577), but the protocol versions clients speak today have them"
)]

mod catalog;
mod client;
mod idempotent;
pub(crate) mod input;
mod kept;
mod level;
mod page;
mod subscriptions;
mod tasks;
pub(crate) mod tasks_2025;
mod traced;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use futures_util::future::Either;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};

use crate::rpc::ToRpc;

use crate::Server;
use crate::ledger::{ClientInfo, Holder, Session};
use crate::pipeline::Reporter;
use crate::server::{Inner, Listener, Lists};
use crate::{Caller, Context, LogLevel};
use client::RequestClient;
use input::{Detach, Rounds};
pub(crate) use kept::{Joining, Kept, sent_mark};
use level::from_rmcp_level;

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
    /// Where the session is kept for other replicas, with a store they share.
    kept: Option<Arc<Kept>>,
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
            kept: None,
        }
    }

    /// This handler, its sessions kept in `kept` for the other replicas.
    pub(crate) fn keeping(mut self, kept: Option<Arc<Kept>>) -> Self {
        self.kept = kept;
        self
    }

    /// A handler for a new session: the same server and caller, a fresh log level and
    /// subscriptions.
    pub fn for_session(&self) -> Self {
        Self::new(Arc::clone(&self.inner), self.slot, self.caller.clone())
            .keeping(self.kept.clone())
    }

    fn page_size(&self) -> usize {
        self.inner.page_size
    }
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

/// The id of the kept session a message came in, from its `Mcp-Session-Id` header.
fn kept_session(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<axum::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(id.to_owned())
}

fn unknown_resource(uri: &str) -> ErrorData {
    crate::surface::catalog::unknown_resource(uri).to_rpc()
}

fn default_log_level() -> Arc<AtomicU8> {
    Arc::new(AtomicU8::new(LogLevel::Info as u8))
}

impl McpHandler {
    /// Who holds the tokens and idempotency keys of `request`: its caller, or for an
    /// anonymous caller its session (when the transport keeps one) or its client.
    pub(super) fn holder(&self, request: &RequestContext<RoleServer>) -> Holder<'_> {
        let caller = self.caller(request);
        let session = self.session_of(request);
        let client = match request.meta.0.get("io.modelcontextprotocol/clientInfo") {
            Some(sent) => ClientInfo::Sent(sent),
            // Read only if a token is issued or spent.
            None if caller.is_anonymous() && !matches!(session, Session::Local(_)) => {
                ClientInfo::Peer(request.peer.clone())
            }
            None => ClientInfo::None,
        };
        Holder::new(
            &self.inner.ledger,
            &self.inner.seal,
            &caller,
            session,
            client,
        )
    }

    /// What makes the holder of `request`, owned (for work that outlives the request: a
    /// task).
    pub(super) fn holder_of(
        &self,
        request: &RequestContext<RoleServer>,
    ) -> (Caller, Session, Option<serde_json::Value>) {
        // The client info of the request (2026-07-28), or of its session's `initialize`.
        let client = request
            .meta
            .0
            .get("io.modelcontextprotocol/clientInfo")
            .cloned()
            .or_else(|| {
                let info = request.peer.peer_info()?;
                serde_json::to_value(&info.client_info).ok()
            });
        (self.caller(request), self.session_of(request), client)
    }

    /// The session `request` came on, as the ledger tells holders apart.
    fn session_of(&self, request: &RequestContext<RoleServer>) -> Session {
        if self.caller.is_some() {
            Session::Local(self.session)
        } else if self.inner.http.stateful && !client::is_stateless(request) {
            match self.kept.as_ref().and(kept_session(&request.extensions)) {
                Some(id) => Session::Kept(id),
                None => Session::Http(self.session),
            }
        } else {
            Session::None
        }
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

    /// Serve a kept session here: one restored from the store takes what its record says; a
    /// new one is left for the gate to register under its id.
    async fn join(
        &self,
        kept: &Kept,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
        let level = Arc::clone(&self.log_level);
        if let Some(restored) = context.extensions.get::<SessionRestoreMarker>() {
            if !kept.restored(&restored.id, level).await {
                return Err(ErrorData::invalid_request(
                    "Session not found: it ended while it was being restored",
                    None,
                ));
            }
        } else if let Some(joining) = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<kept::Joining>())
        {
            joining.join(level);
        }
        Ok(())
    }

    /// Make `change` to the session's record, when the session is kept for other replicas;
    /// whether it is.
    async fn keep(
        &self,
        request: &RequestContext<RoleServer>,
        change: impl Fn(&mut kept::State),
    ) -> Result<bool, ErrorData> {
        let (Some(kept), Some(id)) = (&self.kept, kept_session(&request.extensions)) else {
            return Ok(false);
        };
        kept.change(&id, change)
            .await
            .map(|()| true)
            .map_err(|error| {
                tracing::warn!(%error, session = id, "a session's change could not be kept");
                ErrorData::internal_error(
                    format!(
                        "the change could not be kept for the session's other replicas: {error}"
                    ),
                    None,
                )
            })
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
        let client = Arc::new(
            RequestClient::new(request, Arc::clone(&self.log_level), rounds, task)
                .keeping(self.kept.as_ref()),
        );
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

/// One page of a list result, in the request's span: `$items` ranked by `$ranks`, after the
/// request's cursor.
macro_rules! paged {
    ($handler:expr, $context:expr, $result:ident, $list:literal, $items:expr, $ranks:expr, $request:expr) => {{
        let handler = $handler;
        handler
            .traced($list, &$context, async {
                let (items, next) = page::page(
                    $list,
                    &$items,
                    &$ranks,
                    cursor($request.as_ref()),
                    handler.page_size(),
                )?;
                let mut result = $result::with_all_items(items);
                result.next_cursor = next;
                Ok(result)
            })
            .await
    }};
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
        if let Some(method) = request.method.strip_prefix(tasks_2025::PREFIX) {
            let method = method.to_owned();
            // Boxed: rmcp's dispatch future is as large as its largest method's, and every
            // request (a `tools/call` too) moves it.
            return Box::pin(self.tasks_2025(&method, request.params, context)).await;
        }
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
        // Sessions kept in the store (every one of this endpoint) hear list changes from their
        // stream instead, from whichever replica made them.
        if self.kept.is_some() {
            return;
        }
        self.inner
            .listeners
            .add(Listener::Session(self.session, context.peer, offered));
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        if let Some(kept) = &self.kept {
            Box::pin(self.join(kept, &context)).await?;
        }
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let view = snapshot.view(self.slot);
        paged!(
            self,
            context,
            ListToolsResult,
            "tools/list",
            view.tools,
            view.ranks,
            request
        )
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if client::is_stateless(&context) {
            return Err(removed("logging/setLevel"));
        }
        // Kept for the other replicas first: a change the store refuses is not made here.
        let level = request.level;
        self.keep(&context, |state| state.set_level(level)).await?;
        self.log_level
            .store(from_rmcp_level(level) as u8, Ordering::Relaxed);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.snapshot().view(self.slot).tool(name).cloned()
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        let traced = self.span("tools/call", Some(&request.name), &context);
        // Not an `async fn`: the request is not kept in the future beside the call's own.
        let call = match context.meta.0.get(crate::IDEMPOTENCY_META_KEY).cloned() {
            None => Either::Left(self.call_tool_once(request, context, None)),
            Some(key) => Either::Right(Box::pin(self.call_idempotent(key, request, context))),
        };
        traced.run(call, traced::tool_error)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let owner = self.caller(&context);
        let tasks = &self.inner.tasks;
        let get = Box::pin(tasks.get(&request.task_id, owner.principal()));
        self.traced("tasks/get", &context, get).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let owner = self.caller(&context);
        let tasks = &self.inner.tasks;
        let update =
            Box::pin(tasks.update(&request.task_id, owner.principal(), request.input_responses));
        self.traced("tasks/update", &context, update).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let owner = self.caller(&context);
        let tasks = &self.inner.tasks;
        let cancel = Box::pin(tasks.cancel(&request.task_id, owner.principal()));
        self.traced("tasks/cancel", &context, cancel).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let list = &snapshot.catalog.resources;
        paged!(
            self,
            context,
            ListResourcesResult,
            "resources/list",
            list.items,
            list.ranks,
            request
        )
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let list = &snapshot.catalog.templates;
        paged!(
            self,
            context,
            ListResourceTemplatesResult,
            "resources/templates/list",
            list.items,
            list.ranks,
            request
        )
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let list = async { snapshot.skills.list(cursor(request.as_ref())) };
        self.traced("skills/list", &context, list).await
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let get = async { snapshot.skills.get(&request.uri) };
        self.traced("skills/get", &context, get).await
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let read = async {
            snapshot
                .skills
                .directory(&request.uri, request.cursor.as_deref())
        };
        self.traced("resources/directory/read", &context, read)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let traced = self.span("resources/read", None, &context);
        traced
            .run(Box::pin(self.read(request, context)), traced::never)
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Kept for the other replicas first: a change the store refuses is not made here. A
        // kept session follows the resource's stream in the store instead of this replica's
        // subscribers.
        self.resolves(&request.uri)?;
        if self
            .keep(&context, |state| state.subscribe(&request.uri))
            .await?
        {
            return Ok(());
        }
        self.subscribe_session(&request, context)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.keep(&context, |state| state.unsubscribe(&request.uri))
            .await?;
        self.inner.notifier.unsubscribe(&request.uri, self.session);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.accepted(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed, as the rarer requests' work is: see `on_custom_request`.
        Box::pin(self.listen_stream(context)).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        let list = &snapshot.catalog.prompts;
        paged!(
            self,
            context,
            ListPromptsResult,
            "prompts/list",
            list.items,
            list.ranks,
            request
        )
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let traced = self.span("prompts/get", Some(&request.name), &context);
        traced
            .run(Box::pin(self.prompt(request, context)), traced::never)
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let traced = self.span("completion/complete", None, &context);
        traced
            .run(async { self.completion(&request, context) }, traced::never)
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

/// The cursor of a list request, if it has one.
fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|r| r.cursor.as_deref())
}
