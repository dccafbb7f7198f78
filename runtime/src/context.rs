//! What a handler can reach besides its arguments: the caller, the application's state and
//! the request's identity.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

mod ask;
mod attempt;
mod caller;
mod client;
mod route;
mod state;

use crate::{AbilityError, ErrorCode, Site};
pub use ask::{Ask, Root};
pub(crate) use attempt::{Attempt, HeldKey};
pub use caller::Caller;
pub(crate) use client::Watch;
use client::{Client, never_cancelled};
pub use client::{
    ClientChannel, ClientFuture, ClientRequestFuture, ElicitAction, Elicitation, LogLevel,
};
use route::Route;
pub use state::{State, StateMap};

/// The per-call context handed to the pipeline and, as `&Context`, to handlers that ask for it.
///
/// Cheap to clone.
///
/// ```
/// use abilities::{Caller, Context};
///
/// let ctx = Context::new()
///     .with_request_id("42")
///     .with_caller(Caller::new("alice", ["posts:write"]))
///     .with_state(String::from("shared"));
/// assert!(ctx.caller().has_scope("posts:write"));
/// assert_eq!(ctx.state::<String>().as_deref().map(String::as_str), Some("shared"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Context {
    request_id: Option<Arc<str>>,
    caller: Caller,
    state: Arc<StateMap>,
    site: Option<Arc<Site>>,
    protocol_version: Option<Cow<'static, str>>,
    /// `None` when the request channel carries the token (see [`ClientChannel`]).
    cancellation: Option<CancellationToken>,
    timeout: Option<Duration>,
    client: Option<Client>,
    /// How the call reached its handler: the pipeline's, never read by the handler.
    route: Route,
}

impl Context {
    /// The surface the call came through (`native`, `standard`, `meta`, `aql`, `resource`,
    /// `prompt`, `task`), or `in-process`.
    pub(crate) fn via(&self) -> &'static str {
        self.route.via.unwrap_or("in-process")
    }

    /// Whether the call goes on with one already counted against its rate.
    pub(crate) fn continues(&self) -> bool {
        self.route.continues
    }

    /// The same context, for a call that goes on with one already counted (a confirmed
    /// retry, a further round of input): the rate is not taken again.
    pub(crate) fn continuing(mut self) -> Self {
        self.route.continues = true;
        self
    }

    /// The attempt this call is, when a layer around it keeps one.
    pub(crate) fn attempt(&self) -> Option<&Arc<Attempt>> {
        self.route.attempt.as_ref()
    }

    /// The same context, recording what it does in `attempt`.
    pub(crate) fn with_attempt(mut self, attempt: Arc<Attempt>) -> Self {
        self.route.attempt = Some(attempt);
        self
    }

    /// The same context, as a call through `via`.
    pub(crate) fn with_via(mut self, via: &'static str) -> Self {
        self.route.via = Some(via);
        self
    }

    /// What the surface serving the call set for its handlers, if it is a `T`.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn surface_data<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.route
            .surface
            .clone()
            .and_then(|data| data.downcast::<T>().ok())
    }

    /// Hand the call's handler surface data (see [`surface_data`](Self::surface_data)).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn with_surface_data<T: Send + Sync + 'static>(mut self, data: Arc<T>) -> Self {
        self.route.surface = Some(data);
        self
    }

    /// A context with an anonymous caller (no scopes) and no state: abilities that need a
    /// scope refuse it until [`with_caller`](Self::with_caller) names one that holds it, e.g.
    /// [`Caller::trusted`] for in-process code.
    pub fn new() -> Self {
        Self::default()
    }

    /// The context of one request a server serves, built in one go (no defaults made only to
    /// be replaced: this runs once per call). The request's id, protocol version and
    /// cancellation are read from `client` when asked for.
    pub(crate) fn for_request(
        caller: Caller,
        state: Arc<StateMap>,
        site: Option<Arc<Site>>,
        timeout: Option<Duration>,
        client: Arc<dyn ClientChannel>,
        via: &'static str,
    ) -> Self {
        Self {
            request_id: None,
            caller,
            state,
            site,
            protocol_version: None,
            cancellation: None,
            timeout,
            client: Some(Client(client)),
            route: Route::via(via),
        }
    }

    /// What still watches the call's cancellation once the context is the handler's.
    pub(crate) fn watch(&self) -> Watch {
        Watch {
            token: self.cancellation.clone(),
            client: self.client.as_ref().map(|c| Arc::clone(&c.0)),
        }
    }

    /// Set the request id (the JSON-RPC id on MCP transports).
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Set the caller.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// Share a whole state map (a server shares one across calls).
    #[must_use]
    pub fn with_state_map(mut self, state: Arc<StateMap>) -> Self {
        self.state = state;
        self
    }

    /// Add one state value.
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.state).insert(value);
        self
    }

    /// Set the site this server serves; calls naming another `site_id` are rejected.
    #[must_use]
    pub fn with_site(mut self, site: Arc<Site>) -> Self {
        self.site = Some(site);
        self
    }

    /// Set the protocol version the client negotiated.
    #[must_use]
    pub fn with_protocol_version(mut self, version: impl Into<Cow<'static, str>>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Set the token that signals the caller cancelled the call.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Limit how long the handler may run; past it the call fails with `TIMEOUT`.
    /// Needs a Tokio runtime with the time driver.
    #[must_use]
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The handler's time limit, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Connect the call to its client, for progress and log notifications.
    #[doc(hidden)]
    #[must_use]
    pub fn with_client(mut self, client: Arc<dyn ClientChannel>) -> Self {
        self.client = Some(Client(client));
        self
    }

    /// Report progress: sends `notifications/progress` when the client asked for it (a
    /// progress token on the request); does nothing otherwise. `progress` should grow with
    /// every report.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(client) = &self.client {
            client
                .0
                .progress(progress, total, message.map(str::to_owned))
                .await;
        }
    }

    /// Send a log message to the client (`notifications/message`), if `level` is at or above
    /// the level the client set with `logging/setLevel` (default: `Info`); on protocol
    /// 2026-07-28, the `logLevel` the request carries (none: nothing is sent). Does nothing in
    /// process, without a client.
    ///
    /// Deprecated in protocol 2026-07-28 (SEP-2577): still sent to the clients that ask, but
    /// for what the server's operators need, log to stderr or trace with
    /// [OpenTelemetry](crate::ServerBuilder) instead.
    pub async fn log(&self, level: LogLevel, data: impl serde::Serialize) {
        if let Some(client) = &self.client {
            let data = serde_json::to_value(data)
                .unwrap_or_else(|e| serde_json::Value::String(e.to_string()));
            client.0.log(level, None, data).await;
        }
    }

    /// Ask the user for structured input: `elicitation/create` with `message` and a
    /// `requested_schema` (an object schema of primitive properties). Fails with
    /// `CLIENT_CAPABILITY_MISSING` when the client did not declare elicitation.
    ///
    /// On protocol 2026-07-28 nothing is sent back during the call: the call answers
    /// `input_required` with the question, and the handler runs again from the start once
    /// the client answers (so what it does before asking, it does again). See
    /// [`ask`](Self::ask) to name the question.
    pub async fn elicit(
        &self,
        message: &str,
        requested_schema: serde_json::Value,
    ) -> Result<Elicitation, AbilityError> {
        self.ask(None).elicit(message, requested_schema).await
    }

    /// Whether asking the user ([`elicit`](Self::elicit)) can be answered: the call came
    /// from a client that declared elicitation. A handler with another way forward checks
    /// this first, so it never fails with `CLIENT_CAPABILITY_MISSING` for a client that
    /// cannot answer (on 2026-07-28 such a failure is a JSON-RPC `-32021` for the whole
    /// call).
    ///
    /// ```
    /// # async fn run(ctx: &abilities::Context) -> Result<bool, abilities::AbilityError> {
    /// if !ctx.can_elicit() {
    ///     return Ok(false); // decide without the user
    /// }
    /// let schema = serde_json::json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    /// let answer = ctx.elicit("Go on?", schema).await?;
    /// Ok(answer.action == abilities::client::ElicitAction::Accept)
    /// # }
    /// ```
    pub fn can_elicit(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.0.can_elicit())
    }

    /// Whether [`sample`](Self::sample) can be answered: the client declared sampling.
    pub fn can_sample(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.0.can_sample())
    }

    /// Whether [`list_roots`](Self::list_roots) can be answered: the client declared roots.
    pub fn can_list_roots(&self) -> bool {
        self.client.as_ref().is_some_and(|c| c.0.can_list_roots())
    }

    /// Ask the client's model: `sampling/createMessage` with these params (`messages`,
    /// `maxTokens`, optionally `systemPrompt`...); the client's result (`role`, `content`,
    /// `model`...). Fails with `CLIENT_CAPABILITY_MISSING` when the client did not declare
    /// sampling. Multi-round on 2026-07-28, as [`elicit`](Self::elicit).
    ///
    /// Deprecated in protocol 2026-07-28 (SEP-2577): it still works with clients that declare
    /// sampling, and the server logs a warning the first time a handler asks on that version;
    /// new abilities should call a model provider from the server.
    pub async fn sample(
        &self,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, AbilityError> {
        self.ask(None).sample(params).await
    }

    /// Ask the client's model one question and return the text of its answer.
    pub async fn sample_text(&self, prompt: &str, max_tokens: u32) -> Result<String, AbilityError> {
        self.ask(None).sample_text(prompt, max_tokens).await
    }

    /// The roots the client shares (`roots/list`). Fails with `CLIENT_CAPABILITY_MISSING`
    /// when the client did not declare roots. Multi-round on 2026-07-28, as
    /// [`elicit`](Self::elicit).
    ///
    /// Deprecated in protocol 2026-07-28 (SEP-2577), as [`sample`](Self::sample) is: take what
    /// the roots would say as a parameter, a resource URI or the server's configuration.
    pub async fn list_roots(&self) -> Result<Vec<Root>, AbilityError> {
        self.ask(None).list_roots().await
    }

    /// Questions to the client under a name of the handler's choosing: on 2026-07-28 the
    /// `input_required` answer keys each question (`inputRequests.<key>`), by default in the
    /// order asked (`elicitation-0`, `sampling-1`...). Several questions awaited together
    /// (`tokio::join!`) go to the client in one round.
    ///
    /// ```
    /// # async fn run(ctx: &abilities::Context) -> Result<(), abilities::AbilityError> {
    /// let schema = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}});
    /// let answer = ctx.ask("user_name").elicit("What is your name?", schema).await?;
    /// # Ok(()) }
    /// ```
    pub fn ask<'a>(&'a self, key: impl Into<Option<&'a str>>) -> Ask<'a> {
        Ask {
            ctx: self,
            key: key.into(),
        }
    }

    pub(super) fn client_for(&self, capability: &str) -> Result<&dyn ClientChannel, AbilityError> {
        self.client.as_ref().map(|c| &*c.0).ok_or_else(|| {
            AbilityError::new(
                ErrorCode::ClientCapabilityMissing,
                format!("no client to ask: {capability} needs an MCP client"),
            )
        })
    }

    /// Let the call run on as a background task from here, where it may (an ability
    /// declared `task = "optional"` or `"required"`, called by a client that declares the
    /// tasks extension). Such a call becomes a task the first time its handler waits; what
    /// it asks before that, it asks in the request (multi-round input). A handler that
    /// should ask as a task, not in the request, awaits this first. Elsewhere it only
    /// yields once to the runtime.
    pub async fn background(&self) {
        match &self.client {
            Some(client) => client.0.background().await,
            None => tokio::task::yield_now().await,
        }
    }

    /// The site this server serves, if one is configured.
    pub fn site(&self) -> Option<&Site> {
        self.site.as_deref()
    }

    /// The MCP protocol version the client negotiated (`2025-11-25`, ...), if known.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version
            .as_deref()
            .or_else(|| self.client.as_ref().and_then(|c| c.0.protocol_version()))
    }

    /// Fires when the client cancels this call (`notifications/cancelled`). Long-running
    /// handlers can `select!` on [`CancellationToken::cancelled`]; the pipeline also stops
    /// waiting for the handler when it fires.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancellation
            .as_ref()
            .or_else(|| self.client.as_ref().and_then(|c| c.0.cancellation()))
            .unwrap_or_else(|| never_cancelled())
    }

    /// What names the answer last handed to the handler, if it came sealed (see
    /// [`ClientChannel::sealed_answer`]).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn sealed_answer(&self) -> Option<String> {
        self.client.as_ref().and_then(|c| c.0.sealed_answer())
    }

    /// Whether the client cancelled this call.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation().is_cancelled()
    }

    /// The request id, if the transport has one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id
            .as_deref()
            .or_else(|| self.client.as_ref().and_then(|c| c.0.request_id()))
    }

    /// Who is calling.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The application state of type `T`, if registered.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.state.get::<T>()
    }
}
