//! The MCP server: one registry served as native tools over stdio, streamable HTTP or an
//! in-process client, with site identity, application state, callers and time limits.

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging and sampling deprecated (SEP-2577), but the protocol versions clients speak today have them"
)]

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, ElicitRequestParams, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::auth::{Authenticator, StaticTokens};
use crate::context::{ClientFuture, ClientRequestFuture};
use crate::resource::{Subscriber, contents};
use crate::surface::catalog::{self, Catalog};
use crate::surface::{Surface, View, native};
use crate::{
    Ability, AbilityError, Caller, ClientChannel, Context, ErrorCode, LogLevel, Registry,
    RegistryError, ResourceNotifier, Site, StateMap,
};

/// Why a server could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The registry could not be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An ability's tool name is taken by a built-in tool.
    #[error("the tool name `{tool}` of ability `{ability}` ({at}) is reserved for a built-in tool")]
    ReservedToolName {
        /// The tool name.
        tool: String,
        /// The ability's name.
        ability: String,
        /// Where it is defined.
        at: String,
    },
    /// Two abilities (or an ability and `introspect`) share an MCP-AQL operation name.
    #[error("MCP-AQL operation `{operation}` would be served by {first} and by {second}")]
    AqlOperationCollision {
        /// The operation name.
        operation: String,
        /// The first, as `` `name` (file:line) ``.
        first: String,
        /// The second.
        second: String,
    },
    /// Binding or serving failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP session failed to start.
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// Limits and options of the streamable HTTP transport.
#[derive(Clone, Debug)]
pub(crate) struct HttpOptions {
    pub(crate) max_body_bytes: usize,
    pub(crate) stateful: bool,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            stateful: true,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
        }
    }
}

/// Builds a [`Server`].
///
/// ```standalone_crate
/// use abilities::{Caller, Server, Site, StaticTokens};
///
/// struct Db;
///
/// let server = Server::builder()
///     .name("my-site", "1.0.0")
///     .site(Site::new("main", "https://example.com"))
///     .state(Db)
///     .authenticator(StaticTokens::new().with_token("s3cret", Caller::new("editor", ["posts:write"])))
///     .build()
///     .unwrap();
/// assert_eq!(server.tools()[0].name, "get_site_context");
/// ```
#[must_use]
pub struct ServerBuilder {
    registry: Option<Registry>,
    abilities: Vec<Ability>,
    name: String,
    version: String,
    instructions: Option<String>,
    site: Option<Site>,
    state: StateMap,
    local_caller: Caller,
    authenticator: Option<Arc<dyn Authenticator>>,
    timeout: Option<Duration>,
    http: HttpOptions,
    surface: Surface,
    mounts: Vec<(String, Surface)>,
}

impl ServerBuilder {
    fn new() -> Self {
        Self {
            registry: None,
            abilities: Vec::new(),
            name: "abilities".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            site: None,
            state: StateMap::new(),
            local_caller: Caller::trusted("local"),
            authenticator: None,
            timeout: Some(Duration::from_secs(60)),
            http: HttpOptions::default(),
            surface: Surface::Native,
            mounts: Vec::new(),
        }
    }

    /// The surface stdio, in-process clients, [`router`](Server::router) and
    /// [`http_service`](Server::http_service) present (default: [`Surface::Native`]).
    pub fn surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Serve `surface` at the HTTP `path` of [`serve_http`](Server::serve_http) and
    /// [`app`](Server::app); call once per path. Without any, they serve the default surface
    /// at `/mcp`.
    ///
    /// ```standalone_crate
    /// use abilities::{Server, Surface};
    ///
    /// let server = Server::builder()
    ///     .mount("/mcp", Surface::Native)
    ///     .mount("/mcp/meta", Surface::meta())
    ///     .mount("/mcp/standard", Surface::Standard)
    ///     .build()
    ///     .unwrap();
    /// let app = server.app(); // an axum Router with all three
    /// # drop(app);
    /// ```
    pub fn mount(mut self, path: impl Into<String>, surface: Surface) -> Self {
        self.mounts.push((path.into(), surface));
        self
    }

    /// Serve this registry instead of every ability in the program.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Serve `ability` too (one built with [`Ability::builder`]); call once per ability.
    pub fn ability(mut self, ability: Ability) -> Self {
        self.abilities.push(ability);
        self
    }

    /// The application's name and version, as `serverInfo` reports them.
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Instructions for the client's model, sent at initialization.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The site this server serves (see [`Site`]).
    pub fn site(mut self, site: Site) -> Self {
        self.site = Some(site);
        self
    }

    /// Application state handed to abilities as `State<T>`; call once per type.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Application state the application already holds in an `Arc` (say an axum app's
    /// database), handed to abilities as `State<T>` without a copy.
    pub fn shared_state<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        self.state.insert_shared(value);
        self
    }

    /// The caller of stdio and in-process sessions (default: trusted, every scope).
    pub fn local_caller(mut self, caller: Caller) -> Self {
        self.local_caller = caller;
        self
    }

    /// Scopes of stdio and in-process sessions, instead of every scope.
    pub fn local_scopes<S: Into<String>>(self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.local_caller(Caller::new("local", scopes))
    }

    /// How HTTP callers are identified. Without one, HTTP callers are anonymous, with no
    /// scopes.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Per-call time limit (default 60 s); `None` for none.
    pub fn timeout(mut self, limit: Option<Duration>) -> Self {
        self.timeout = limit;
        self
    }

    /// The largest HTTP request body accepted (default 4 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.http.max_body_bytes = bytes;
        self
    }

    /// Serve HTTP without sessions: every request stands alone (default: sessions).
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.http.stateful = !stateless;
        self
    }

    /// `Host` values HTTP requests may carry (default: loopback names), against DNS rebinding.
    pub fn allowed_hosts<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.http.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// `Origin` values browser requests may carry (default: loopback origins on any port).
    pub fn allowed_origins<S: Into<String>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Self {
        self.http.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Build the server: collect the registry (unless given) and derive every tool once.
    pub fn build(self) -> Result<Server, ServerError> {
        let registry = match self.registry {
            Some(registry) => registry,
            None => Registry::collect()?,
        };
        let registry = registry.extended(self.abilities)?;
        for ability in registry.iter() {
            if ability.is_tool() && ability.tool_name() == native::SITE_CONTEXT_TOOL {
                return Err(ServerError::ReservedToolName {
                    tool: ability.tool_name().to_owned(),
                    ability: ability.name().to_owned(),
                    at: ability.location(),
                });
            }
        }
        let view = Arc::new(View::new(self.surface, &registry)?);
        let mut mounts = Vec::with_capacity(self.mounts.len());
        for (path, surface) in self.mounts {
            mounts.push((path, Arc::new(View::new(surface, &registry)?)));
        }
        let authenticator = self
            .authenticator
            .unwrap_or_else(|| Arc::new(StaticTokens::new().allow_anonymous(Caller::anonymous())));
        let catalog = Catalog::new(&registry);
        let capabilities = capabilities(&catalog);
        let notifier = ResourceNotifier::default();
        let mut state = self.state;
        state.insert(notifier.clone());
        Ok(Server {
            view,
            inner: Arc::new(Inner {
                mounts,
                registry,
                catalog,
                capabilities,
                notifier,
                info: Implementation::new(self.name, self.version),
                instructions: self.instructions,
                site: self.site.map(Arc::new),
                state: Arc::new(state),
                local_caller: self.local_caller,
                authenticator,
                timeout: self.timeout,
                http: self.http,
            }),
        })
    }
}

/// What the server declares: logging and tools always; resources (with subscriptions),
/// prompts and completions when abilities are served that way.
fn capabilities(catalog: &Catalog) -> ServerCapabilities {
    let mut capabilities = json!({"logging": {}, "tools": {}});
    if catalog.has_resources() {
        capabilities["resources"] = json!({"subscribe": true, "listChanged": false});
    }
    if catalog.has_prompts() {
        capabilities["prompts"] = json!({"listChanged": false});
    }
    if catalog.has_prompts() || !catalog.templates.is_empty() {
        capabilities["completions"] = json!({});
    }
    serde_json::from_value(capabilities).unwrap_or_else(|e| {
        tracing::error!(error = %e, "server capabilities did not convert");
        ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .build()
    })
}

pub(crate) struct Inner {
    pub(crate) mounts: Vec<(String, Arc<View>)>,
    pub(crate) registry: Registry,
    catalog: Catalog,
    capabilities: ServerCapabilities,
    notifier: ResourceNotifier,
    info: Implementation,
    instructions: Option<String>,
    site: Option<Arc<Site>>,
    state: Arc<StateMap>,
    local_caller: Caller,
    pub(crate) authenticator: Arc<dyn Authenticator>,
    timeout: Option<Duration>,
    pub(crate) http: HttpOptions,
}

/// An MCP server over one registry. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
    pub(crate) view: Arc<View>,
}

impl Server {
    /// Start building a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// The tools as `tools/list` reports them on this server's surface (native:
    /// `get_site_context`, then one per tool ability).
    pub fn tools(&self) -> &[Tool] {
        &self.view.tools
    }

    /// The surface this server presents.
    pub fn surface(&self) -> &Surface {
        &self.view.surface
    }

    /// The same server (registry, state, subscriptions) presenting another surface. Fails
    /// as [`ServerBuilder::build`] would for that surface (MCP-AQL operation names that
    /// collide).
    pub fn with_surface(&self, surface: Surface) -> Result<Server, ServerError> {
        Ok(Server {
            inner: Arc::clone(&self.inner),
            view: Arc::new(View::new(surface, &self.inner.registry)?),
        })
    }

    /// The registry served.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Notifies subscribers that a resource changed (abilities get the same notifier as
    /// `State<ResourceNotifier>`).
    pub fn resource_notifier(&self) -> &ResourceNotifier {
        &self.inner.notifier
    }

    /// The `rmcp` handler for this server, for a transport of your own. `caller` is who every
    /// request comes from, or `None` to take it from the HTTP request.
    pub fn handler(&self, caller: Option<Caller>) -> McpHandler {
        McpHandler {
            inner: Arc::clone(&self.inner),
            view: Arc::clone(&self.view),
            caller,
            log_level: default_log_level(),
            session: next_session(),
        }
    }

    /// The handler for local transports (stdio, in-process), as the configured local caller.
    pub(crate) fn local_handler(&self) -> McpHandler {
        self.handler(Some(self.inner.local_caller.clone()))
    }
}

/// The `rmcp` [`ServerHandler`] of a [`Server`]: native tools over its registry. One per
/// session: it holds the session's log level.
#[derive(Clone)]
pub struct McpHandler {
    inner: Arc<Inner>,
    view: Arc<View>,
    caller: Option<Caller>,
    log_level: Arc<AtomicU8>,
    /// Identifies the session's resource subscriptions.
    session: u64,
}

impl McpHandler {
    /// A handler for a new session: the same server and caller, a fresh log level and
    /// subscriptions.
    pub fn for_session(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            view: Arc::clone(&self.view),
            caller: self.caller.clone(),
            log_level: default_log_level(),
            session: next_session(),
        }
    }
}

/// A process-wide unique key for a session or a `subscriptions/listen` request.
fn next_session() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An rmcp result type from its JSON, marked complete (`resultType`, protocol 2026-07-28;
/// rmcp drops it for clients of older versions).
fn from_json<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Value::Object(map) = &mut value {
        map.entry("resultType").or_insert_with(|| json!("complete"));
    }
    serde_json::from_value(value).map_err(|e| {
        tracing::error!(error = %e, "a result did not convert");
        ErrorData::internal_error("the result could not be encoded", None)
    })
}

fn unknown_resource(uri: &str) -> ErrorData {
    let shown: String = uri.chars().take(200).collect();
    AbilityError::new(
        ErrorCode::NotFoundResource,
        format!("no resource at '{shown}'"),
    )
    .with_details(json!({ "uri": shown }))
    .to_rpc()
}

fn default_log_level() -> Arc<AtomicU8> {
    Arc::new(AtomicU8::new(LogLevel::Info as u8))
}

/// Progress and log notifications of one request, back to its client. It keeps the request
/// context and reads the progress token and client capabilities from it only when a handler
/// needs them, so calls that never talk back pay nothing for them.
struct RequestClient {
    request: RequestContext<RoleServer>,
    log_level: Arc<AtomicU8>,
}

impl RequestClient {
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

fn from_rmcp_level(level: LoggingLevel) -> LogLevel {
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

impl McpHandler {
    fn context(&self, request: RequestContext<RoleServer>) -> Context {
        let caller = match &self.caller {
            Some(caller) => caller.clone(),
            None => request
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .cloned()
                .unwrap_or_else(Caller::anonymous),
        };
        let mut ctx = Context::new()
            .with_request_id(request_id(&request.id))
            .with_caller(caller)
            .with_state_map(Arc::clone(&self.inner.state))
            .with_cancellation(request.ct.clone());
        if let Some(site) = &self.inner.site {
            ctx = ctx.with_site(Arc::clone(site));
        }
        if let Some(version) = request.protocol_version() {
            ctx = ctx.with_protocol_version(known_version(version.as_str()));
        }
        if let Some(limit) = self.inner.timeout {
            ctx = ctx.with_timeout(limit);
        }
        ctx.with_client(Arc::new(RequestClient {
            request,
            log_level: Arc::clone(&self.log_level),
        }))
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

fn request_id(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
        rmcp::model::NumberOrString::String(s) => s.to_string(),
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(self.inner.capabilities.clone())
            .with_server_info(self.inner.info.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        Err(crate::rpc::untyped_request(&request.method, request.params))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.view.tools.clone()))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(from_rmcp_level(request.level) as u8, Ordering::Relaxed);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.view.tool(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let ctx = self.context(context);
        let args = request.arguments.map_or(Value::Null, Value::Object);
        self.view
            .call(&self.inner.registry, ctx, self.session, &request.name, args)
            .await
            .map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        from_json(json!({ "resources": self.inner.catalog.resources }))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({ "resourceTemplates": self.inner.catalog.templates }))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let inner = &self.inner;
        let Some(call) = inner.catalog.resolve(&inner.registry, &request.uri) else {
            return Err(unknown_resource(&request.uri));
        };
        let Some(ability) = inner.registry.at(call.ability) else {
            return Err(unknown_resource(&request.uri));
        };
        let output = Box::pin(ability.call_output(self.context(context), call.args))
            .await
            .map_err(|e| e.to_rpc())?;
        let output = output.into_unwrapped();
        let items = contents(&request.uri, call.mime_type.as_deref(), output);
        let result: ReadResourceResult = from_json(json!({ "contents": items }))?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let inner = &self.inner;
        if inner
            .catalog
            .resolve(&inner.registry, &request.uri)
            .is_none()
        {
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
        let inner = &self.inner;
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| inner.catalog.resolve(&inner.registry, uri).is_some())
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(uris);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let key = next_session();
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
        context.cancelled().await;
        for uri in &uris {
            self.inner.notifier.unsubscribe(uri, key);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({ "prompts": self.inner.catalog.prompts }))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let inner = &self.inner;
        let ability = inner
            .catalog
            .prompt(&request.name)
            .and_then(|i| inner.registry.at(i));
        let Some(ability) = ability else {
            let shown: String = request.name.chars().take(100).collect();
            return Err(AbilityError::new(
                ErrorCode::NotFoundAbility,
                format!("unknown prompt: {shown}"),
            )
            .with_details(json!({ "name": shown }))
            .to_rpc());
        };
        let args = catalog::prompt_arguments(ability, request.arguments);
        let output = Box::pin(ability.call_output(self.context(context), args))
            .await
            .map_err(|e| e.to_rpc())?;
        let result: GetPromptResult = from_json(catalog::prompt_result(ability, output))?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let inner = &self.inner;
        let reference = serde_json::to_value(&request.r#ref).unwrap_or(Value::Null);
        let ability = inner
            .catalog
            .reference(&inner.registry, &reference)
            .and_then(|i| inner.registry.at(i));
        let Some(ability) = ability else {
            return Err(AbilityError::new(
                ErrorCode::NotFoundResource,
                "the completion reference names no prompt or resource template",
            )
            .with_details(json!({ "ref": reference }))
            .to_rpc());
        };
        let ctx = self.context(context);
        ability.check_permission(&ctx).map_err(|e| e.to_rpc())?;
        let values = catalog::complete(
            ability,
            &ctx,
            &request.argument.name,
            &request.argument.value,
        )
        .map_err(|e| e.to_rpc())?;
        from_json(values)
    }
}
