//! [`ServerBuilder`]: everything a server is configured with, checked once in `build()`.

#![allow(
    deprecated,
    reason = "rmcp marks MCP logging deprecated (SEP-2577), but the protocol versions clients speak today have it"
)]

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{Implementation, ServerCapabilities};

use super::{HttpConfig, Inner, LedgerConfig, Listeners, Server, ServerError, Snapshot};
use crate::auth::{Authenticator, StaticTokens};
use crate::seal::StateSeal;
use crate::store::{MemoryStore, Store};
use crate::surface::catalog::Catalog;
use crate::surface::{Listing, Surface};
use crate::task::{TaskConfig, Tasks};
use crate::{Ability, Caller, Registry, ResourceNotifier, SchemaProfile, Site, StateMap};

/// Builds a [`Server`].
///
/// ```standalone_crate
/// use abilities::{Caller, Server, Site, auth::StaticTokens};
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
    schema_profile: SchemaProfile,
    state: StateMap,
    local_caller: Caller,
    authenticator: Option<Arc<dyn Authenticator>>,
    timeout: Option<Duration>,
    http: HttpConfig,
    surface: Surface,
    mounts: Vec<(String, Surface)>,
    page_size: usize,
    store: Option<Arc<dyn Store>>,
    tasks: TaskConfig,
    ledger: LedgerConfig,
    rate_limit: Option<crate::Rate>,
    audit_log: Option<AuditLog>,
    chain: crate::middleware::Chain,
    /// `subscriptions/listen` streams at once: per server, per caller.
    listen_streams: (usize, usize),
    skills: Vec<crate::Skill>,
    categories: std::collections::BTreeMap<String, String>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::MetricsConfig>,
    #[cfg(feature = "otel")]
    otel: Option<crate::otel::OtelConfig>,
}

/// Where the audit trail's JSON lines go.
enum AuditLog {
    File(std::path::PathBuf),
    Writer(Box<dyn std::io::Write + Send>),
}

impl AuditLog {
    /// The writer: the file opened to append.
    fn open(self) -> Result<Box<dyn std::io::Write + Send>, ServerError> {
        match self {
            Self::Writer(writer) => Ok(writer),
            Self::File(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map(|file| Box::new(file) as Box<dyn std::io::Write + Send>)
                .map_err(|error| ServerError::AuditLog {
                    path: path.display().to_string(),
                    error,
                }),
        }
    }
}

impl ServerBuilder {
    pub(super) fn new() -> Self {
        Self {
            registry: None,
            abilities: Vec::new(),
            name: "abilities".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            skills: Vec::new(),
            categories: std::collections::BTreeMap::new(),
            site: None,
            schema_profile: SchemaProfile::Portable,
            state: StateMap::new(),
            local_caller: Caller::trusted("local"),
            authenticator: None,
            timeout: Some(Duration::from_secs(60)),
            http: HttpConfig::default(),
            surface: Surface::Native,
            mounts: Vec::new(),
            page_size: 100,
            store: None,
            tasks: TaskConfig::default(),
            ledger: LedgerConfig::default(),
            rate_limit: None,
            audit_log: None,
            chain: crate::middleware::Chain::default(),
            listen_streams: (
                super::streams::DEFAULT_PER_SERVER,
                super::streams::DEFAULT_PER_CALLER,
            ),
            #[cfg(feature = "metrics")]
            metrics: None,
            #[cfg(feature = "otel")]
            otel: None,
        }
    }

    /// Trace what the server does for OpenTelemetry (feature `otel`): a span per request,
    /// joined to the client's trace (`traceparent`/`tracestate` in the request's `_meta`,
    /// else the HTTP `traceparent` header), one per ability call, and child spans for the
    /// store and a task's run, exported where `config` says.
    #[cfg(feature = "otel")]
    pub fn otel(mut self, config: crate::otel::OtelConfig) -> Self {
        self.otel = Some(config);
        self
    }

    /// Count what the server does for Prometheus (feature `metrics`): calls by ability,
    /// surface and outcome, their latency, tasks, sessions and listen streams against their
    /// caps, confirmation tokens, rate-limit refusals and store latency. The HTTP app serves
    /// the exposition where `config` says (`/metrics` by default), and the live view when
    /// asked for; [`Server::metrics`] reads it in process, [`Server::serve_metrics`] serves
    /// it on an address of its own.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, config: crate::metrics::MetricsConfig) -> Self {
        self.metrics = Some(config);
        self
    }

    /// How often one caller may call each ability that sets no rate of its own (default: no
    /// limit). A caller is the authenticated principal; anonymous callers share one budget.
    /// Past the limit a call is refused with `RATE_LIMITED` and `details.retry_after` (and,
    /// over HTTP on the standard surface, `429` with `Retry-After`). With a store that
    /// replicas share ([`store`](Self::store)), the budgets are kept there, so they hold
    /// across replicas.
    pub fn rate_limit(mut self, rate: crate::Rate) -> Self {
        self.rate_limit = Some(rate);
        self
    }

    /// Append the audit trail to the file at `path` as JSON lines (created if missing),
    /// besides the `tracing` events on the target `abilities::audit`. A file that cannot be
    /// opened fails [`build`](Self::build).
    pub fn audit_log(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.audit_log = Some(AuditLog::File(path.into()));
        self
    }

    /// Write the audit trail's JSON lines to `writer` (a pipe, a socket, a buffer), one event
    /// a line, from a thread of its own.
    pub fn audit_writer(mut self, writer: impl std::io::Write + Send + 'static) -> Self {
        self.audit_log = Some(AuditLog::Writer(Box::new(writer)));
        self
    }

    /// Put `middleware` around every call (at the end of the [chain](Self::chain), before
    /// `confirmation` while it stands last): see [`middleware`](crate::middleware).
    pub fn middleware(mut self, middleware: impl crate::middleware::Middleware) -> Self {
        self.chain = self.chain.with(middleware);
        self
    }

    /// The links every call runs through, in order: the built-in concerns and middleware
    /// (by default [`Chain::default`](crate::middleware::Chain::default): the built-ins, with
    /// what [`middleware`](Self::middleware) added before `confirmation`). Replaces the chain
    /// set so far: a chain without `confirmation` confirms nothing, one without
    /// `idempotency` refuses idempotency keys.
    pub fn chain(mut self, chain: crate::middleware::Chain) -> Self {
        self.chain = chain;
        self
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

    /// Serve a skill (see [`Skill`](crate::Skill)): its files as `skill://` resources, listed
    /// by `skills/list`, on every surface. Two skills with one path fail
    /// [`build`](Self::build).
    ///
    /// ```
    /// use abilities::{Server, skill::Skill};
    ///
    /// let skill = Skill::new(
    ///     "publishing",
    ///     [("SKILL.md", "---\nname: publishing\ndescription: How to publish.\n---\nFirst draft.\n")],
    /// )?;
    /// let server = Server::builder().skill(skill).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn skill(mut self, skill: crate::Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Serve several skills, such as those [`skills!`](https://docs.rs/abilities/latest/abilities/macro.skills.html)
    /// embeds.
    pub fn skills(mut self, skills: impl IntoIterator<Item = crate::Skill>) -> Self {
        self.skills.extend(skills);
        self
    }

    /// Write a skill for each of `categories` (`(category, description)`) from the public
    /// tool abilities of that category (`#[ability(category = "...")]`): what each is for,
    /// its semantic and danger, its parameters and result in prose, its confirmation, task
    /// and permission behaviour. The skill is named after the category (lower-cased, other
    /// characters made `-`); its text depends only on the abilities, so its digest is stable.
    /// A category with no public tool ability has no skill.
    pub fn category_skills<C, D>(mut self, categories: impl IntoIterator<Item = (C, D)>) -> Self
    where
        C: Into<String>,
        D: Into<String>,
    {
        self.categories
            .extend(categories.into_iter().map(|(c, d)| (c.into(), d.into())));
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

    /// How native (and standard) tools' input schemas are written for the model APIs that
    /// read them (default: [`SchemaProfile::Portable`]). [`build`](Self::build) fails when an
    /// ability's schema has no form in the profile, naming it.
    pub fn schema_profile(mut self, profile: SchemaProfile) -> Self {
        self.schema_profile = profile;
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
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Limits and options of the streamable HTTP transport (see [`HttpConfig`]).
    pub fn http(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }

    /// How many `subscriptions/listen` streams (protocol 2026-07-28) the server holds open
    /// at once, all callers together (default: 1,000), and how many of them one
    /// authenticated caller may hold (default: 16). Past either, a listen request is
    /// answered `-32000` with `data.code: LIMIT_EXCEEDED` and the limit. Anonymous callers
    /// cannot be told apart, so they count against the server's cap only.
    pub fn max_listen_streams(mut self, per_server: usize, per_caller: usize) -> Self {
        self.listen_streams = (per_server, per_caller);
        self
    }

    /// How many items one page of `tools/list`, `resources/list`,
    /// `resources/templates/list` and `prompts/list` holds (default 100, at least 1).
    pub fn page_size(mut self, items: usize) -> Self {
        self.page_size = items.max(1);
        self
    }

    /// Where what outlives a request is kept: background tasks, the confirmation ledger and
    /// idempotency records (default: a [`MemoryStore`], gone with the process). Give an
    /// `SqliteStore` file (feature `sqlite`) so they outlive a restart, or a `PostgresStore` (feature
    /// `postgres`) shared by every replica, which also carries resource updates between
    /// them.
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// What the server remembers between a client's requests: confirmation tokens,
    /// idempotency keys, multi-round request state (see [`LedgerConfig`]).
    pub fn ledger(mut self, ledger: LedgerConfig) -> Self {
        self.ledger = ledger;
        self
    }

    /// How background tasks run: how long they are kept, how often clients poll, how many
    /// may run at once (see [`TaskConfig`]).
    pub fn tasks(mut self, tasks: TaskConfig) -> Self {
        self.tasks = tasks;
        self
    }

    /// Build the server: collect the registry (unless given) and derive every tool once.
    pub fn build(mut self) -> Result<Server, ServerError> {
        let instruments = self.instruments()?;
        let registry = match self.registry {
            Some(registry) => registry,
            None => Registry::collect()?,
        };
        let registry = registry.extended(self.abilities)?;
        let seal = StateSeal::new(
            self.ledger.request_state_key.as_deref(),
            self.ledger.request_state_ttl,
        )
        .map_err(ServerError::RequestStateKey)?;
        let store: Arc<dyn Store> = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let store = crate::instruments::Measured::around(store, &instruments);
        let tasks = Tasks::new(Arc::clone(&store), &self.tasks).counted(instruments.clone());
        let ledger = crate::ledger::Ledger::new(
            Arc::clone(&store),
            self.ledger.tokens_per_caller,
            self.ledger.idempotency_ttl,
            self.ledger.idempotency_lease,
        )?;
        let surface = Arc::new(self.surface.clone());
        let (surfaces, mounts) = slots(self.surface, self.mounts);
        let sink = self.audit_log.map(AuditLog::open).transpose()?;
        let guards = Arc::new(crate::pipeline::Guards::new(
            crate::pipeline::rate::RateLimits::new(self.rate_limit, &store),
            crate::audit::Audit::new(sink)?,
            &self.chain,
            instruments.clone(),
        ));
        warn_unconfirmed(&guards, &surfaces);
        let notifier = ResourceNotifier::shared(&store);
        let mut state = self.state;
        state.insert(notifier.clone());
        let listing = Listing {
            site: self.site.is_some(),
            profile: self.schema_profile,
        };
        let skills = crate::skill::Skills {
            written: Arc::new(self.skills),
            categories: Arc::new(self.categories),
            groups: Arc::default(),
        };
        let snapshot = Snapshot::new(registry, &surfaces, &state, listing, &skills)?;
        let authenticator = self
            .authenticator
            .unwrap_or_else(|| Arc::new(StaticTokens::new().allow_anonymous(Caller::anonymous())));
        let server = Server {
            slot: 0,
            surface,
            inner: Arc::new(Inner {
                snapshot: RwLock::new(Arc::new(snapshot)),
                surfaces: Mutex::new(surfaces),
                mounts,
                listeners: Listeners::default(),
                notifier,
                info: Implementation::new(self.name, self.version),
                instructions: self.instructions,
                site: self.site.map(Arc::new),
                profile: self.schema_profile,
                state: Arc::new(state),
                local_caller: self.local_caller,
                authenticator,
                timeout: self.timeout,
                http: self.http,
                page_size: self.page_size,
                seal,
                tasks,
                ledger,
                guards,
                streams: super::streams::Streams::new(self.listen_streams.0, self.listen_streams.1),
                skills: Mutex::new(skills),
                instruments,
                drain: super::Drain::new(),
            }),
        };
        #[cfg(feature = "metrics")]
        server.sample_state();
        Ok(server)
    }

    /// What the `metrics` and `otel` features install, as the builder was told.
    fn instruments(&mut self) -> Result<crate::instruments::Instruments, ServerError> {
        let instruments = crate::instruments::Instruments::default();
        #[cfg(feature = "metrics")]
        let instruments = instruments.counting(
            self.metrics
                .take()
                .map(|config| (Arc::new(crate::metrics::Metrics::new()), config)),
        );
        #[cfg(feature = "otel")]
        let instruments = instruments.tracing_with(match self.otel.take() {
            Some(config) => Some(Arc::new(
                crate::otel::Tracing::new(config, &self.name).map_err(ServerError::Tracing)?,
            )),
            None => None,
        });
        Ok(instruments)
    }
}

/// What the server declares: logging and tools always; resources (with subscriptions),
/// prompts and completions when abilities are served that way. Every list can change while
/// the server runs ([`Server::abilities`]), so each says `listChanged`.
pub(super) fn capabilities(
    catalog: &Catalog,
    registry: &Registry,
    skills: &crate::skill::SkillSet,
) -> ServerCapabilities {
    use rmcp::model::{JsonObject, PromptsCapability, ResourcesCapability, ToolsCapability};
    let mut capabilities = ServerCapabilities::default();
    capabilities.logging = Some(JsonObject::new());
    let mut tools = ToolsCapability::default();
    tools.list_changed = Some(true);
    capabilities.tools = Some(tools);
    if registry
        .iter()
        .any(|a| a.task_support() != crate::TaskSupport::Forbidden)
    {
        capabilities.extensions = Some(
            [(
                rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                JsonObject::new(),
            )]
            .into_iter()
            .collect(),
        );
    }
    if !skills.is_empty() {
        // Declared inline, with the `resources` capability it requires.
        let mut skills = JsonObject::new();
        skills.insert("directoryRead".to_owned(), serde_json::Value::Bool(true));
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::SKILLS_EXTENSION_ID.to_owned(), skills);
    }
    if catalog.has_resources() || !skills.is_empty() {
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        resources.list_changed = Some(true);
        capabilities.resources = Some(resources);
    }
    if catalog.has_prompts() {
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(true);
        capabilities.prompts = Some(prompts);
    }
    if catalog.has_prompts() || catalog.has_templates() {
        capabilities.completions = Some(JsonObject::new());
    }
    capabilities
}

/// A warning at start-up when MCP-AQL would run dangerous operations unconfirmed (the chain
/// has no `confirmation` link).
fn warn_unconfirmed(guards: &crate::pipeline::Guards, surfaces: &[Surface]) {
    if !guards.confirms && surfaces.iter().any(|surface| surface.label() == "aql") {
        tracing::warn!(
            "the chain has no `confirmation` link: MCP-AQL runs dangerous operations unconfirmed"
        );
    }
}

/// The server's surfaces by slot (its own first, then each mount's), and each mount's path,
/// slot and surface.
#[allow(clippy::type_complexity, reason = "the two lists `Inner` holds")]
fn slots(
    own: Surface,
    mounted: Vec<(String, Surface)>,
) -> (Vec<Surface>, Vec<(String, usize, Arc<Surface>)>) {
    let mut surfaces = vec![own];
    let mut mounts = Vec::with_capacity(mounted.len());
    for (path, surface) in mounted {
        mounts.push((path, surfaces.len(), Arc::new(surface.clone())));
        surfaces.push(surface);
    }
    (surfaces, mounts)
}
