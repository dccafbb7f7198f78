//! The server: one registry, its surfaces and the state they share. What clients see of the
//! registry is a [`Snapshot`], rebuilt once per change ([`ServedAbilities::add`] / [`remove`]
//! (ServedAbilities::remove)) and swapped whole, so every request sees one consistent registry.

mod builder;
mod config;
mod drain;
mod listeners;
#[cfg(feature = "metrics")]
mod metrics;
pub(crate) mod streams;

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use rmcp::model::{Implementation, ServerCapabilities, Tool};

pub use builder::ServerBuilder;
pub(crate) use config::{DEFAULT_DRAIN_GRACE, DEFAULT_HEADER_READ_TIMEOUT};
pub use config::{HttpConfig, LedgerConfig};
pub(crate) use drain::Drain;
pub use drain::NotReady;
pub(crate) use listeners::{ListStreams, Listener, Listeners, Lists};

use crate::auth::Authenticator;
use crate::seal::StateSeal;
use crate::surface::catalog::Catalog;
use crate::surface::{Listing, Surface, SurfaceError, View, native};
use crate::{Ability, Caller, Registry, RegistryError, ResourceNotifier, Site, StateMap};

/// What went wrong with a server: building it ([`ServerBuilder::build`](crate::ServerBuilder::build):
/// the registry, a skill, a schema, state, the store...), serving it (binding, a session that
/// failed to start, metrics asked of a server that counts none) or changing it while it runs
/// (an ability that is not served).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The registry could not be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A skill cannot be served (a bad name, two with one path...).
    #[error(transparent)]
    Skill(#[from] crate::SkillError),
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
    #[cfg(feature = "aql")]
    #[error("MCP-AQL operation `{operation}` would be served by {first} and by {second}")]
    AqlOperationCollision {
        /// The operation name.
        operation: String,
        /// The first, as `` `name` (file:line) ``.
        first: String,
        /// The second.
        second: String,
    },
    /// An MCP-AQL relation ([`Aql::relation`](crate::Aql::relation)) names what is not there.
    #[cfg(feature = "aql")]
    #[error("MCP-AQL relation `{relation}` of operation `{operation}`: {problem}")]
    AqlRelation {
        /// The operation the relation is declared on.
        operation: String,
        /// The relation's name.
        relation: String,
        /// What is wrong.
        problem: String,
    },
    /// `Server::serve_metrics` on a server built without `ServerBuilder::metrics` (feature
    /// `metrics`).
    #[error("this server counts nothing: build it with `ServerBuilder::metrics` to serve metrics")]
    NoMetrics,
    /// The OpenTelemetry exporter could not be made: its configuration is wrong (feature
    /// `otel`).
    #[error("tracing could not start: {0}")]
    Tracing(String),
    /// The audit log file could not be opened.
    #[error("the audit log `{path}` could not be opened: {error}")]
    AuditLog {
        /// The file's path.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// Binding or serving failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP session failed to start.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// An ability takes application state the server was not given.
    #[error(
        "ability `{ability}` ({at}) takes `State<{state}>`, but the server has no `{state}`: {hint}",
        hint = state_hint(.state)
    )]
    MissingState {
        /// The ability's name.
        ability: String,
        /// Where it is defined.
        at: String,
        /// The state's type.
        state: &'static str,
    },
    /// The key for multi-round input state is unusable (shorter than 32 bytes).
    #[error("request state key: {0}")]
    RequestStateKey(String),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// An ability's input schema has no form in the server's
    /// [`SchemaProfile`](crate::SchemaProfile).
    #[error(
        "ability `{ability}` ({at}): its input schema at `{pointer}` {problem}, which the {profile:?} schema profile cannot express"
    )]
    SchemaProfile {
        /// The ability's name.
        ability: String,
        /// Where it is defined.
        at: String,
        /// The profile.
        profile: crate::SchemaProfile,
        /// JSON Pointer into the listed input schema.
        pointer: String,
        /// What strict form cannot write.
        problem: String,
    },
    /// [`ServedAbilities::remove`] found no ability of that name.
    #[error("no ability named `{0}` is served")]
    UnknownAbility(String),
}

impl From<SurfaceError> for ServerError {
    fn from(error: SurfaceError) -> Self {
        match error {
            #[cfg(feature = "aql")]
            SurfaceError::AqlOperationCollision {
                operation,
                first,
                second,
            } => Self::AqlOperationCollision {
                operation,
                first,
                second,
            },
            #[cfg(feature = "aql")]
            SurfaceError::AqlRelation {
                operation,
                relation,
                problem,
            } => Self::AqlRelation {
                operation,
                relation,
                problem,
            },
        }
    }
}

/// What clients see at one moment: the registry, every surface's tools and the resource and
/// prompt catalog, derived together.
pub(crate) struct Snapshot {
    pub(crate) registry: Registry,
    /// One view per surface slot (see [`Inner::surfaces`]).
    pub(crate) views: Vec<Arc<View>>,
    pub(crate) catalog: Arc<Catalog>,
    /// The skills served: the hand-written ones and those written from the registry.
    pub(crate) skills: Arc<crate::skill::SkillSet>,
    pub(crate) capabilities: ServerCapabilities,
}

impl Snapshot {
    /// The snapshot of `registry` on `surfaces`.
    fn new(
        registry: Registry,
        surfaces: &[Surface],
        state: &StateMap,
        listing: Listing,
        skills: &crate::skill::Skills,
    ) -> Result<Self, ServerError> {
        check_reserved(&registry)?;
        check_requirements(&registry, state)?;
        check_profile(listing.profile, &registry, listing.site)?;
        let views = surfaces
            .iter()
            .map(|surface| View::new(surface.clone(), &registry, listing).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let skills = Arc::new(crate::skill::SkillSet::new(skills, &registry)?);
        let mut catalog = Catalog::new(&registry);
        catalog.add_skills(&skills);
        let catalog = Arc::new(catalog);
        let capabilities = builder::capabilities(&catalog, &registry, &skills);
        Ok(Self {
            registry,
            views,
            catalog,
            skills,
            capabilities,
        })
    }

    pub(crate) fn view(&self, slot: usize) -> &Arc<View> {
        // Slots only grow, and every snapshot has a view per slot.
        &self.views[slot.min(self.views.len().saturating_sub(1))]
    }
}

/// Every ability's extractors get what they need from this server.
fn check_requirements(registry: &Registry, state: &StateMap) -> Result<(), ServerError> {
    for ability in registry {
        if let Some(missing) = ability.requirements().iter().find(|r| !r.met_by(state)) {
            return Err(ServerError::MissingState {
                ability: ability.name().to_owned(),
                at: ability.location(),
                state: missing.type_name(),
            });
        }
    }
    Ok(())
}

/// An ability whose tool name a built-in tool has is refused.
fn check_reserved(registry: &Registry) -> Result<(), ServerError> {
    match registry
        .iter()
        .find(|a| a.is_tool() && a.tool_name() == native::SITE_CONTEXT_TOOL)
    {
        Some(ability) => Err(ServerError::ReservedToolName {
            tool: ability.tool_name().to_owned(),
            ability: ability.name().to_owned(),
            at: ability.location(),
        }),
        None => Ok(()),
    }
}

pub(crate) struct Inner {
    snapshot: RwLock<Arc<Snapshot>>,
    /// The surface of each view slot: 0 is the builder's, then its mounts, then
    /// [`Server::with_surface`]'s. Held while a snapshot is rebuilt, so changes are serial.
    surfaces: Mutex<Vec<Surface>>,
    pub(crate) mounts: Vec<(String, usize, Arc<Surface>)>,
    pub(crate) listeners: Listeners,
    pub(crate) notifier: ResourceNotifier,
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) site: Option<Arc<Site>>,
    /// How native tools' input schemas are written.
    pub(crate) profile: crate::SchemaProfile,
    pub(crate) state: Arc<StateMap>,
    pub(crate) local_caller: Caller,
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) http: HttpConfig,
    pub(crate) page_size: usize,
    /// Seals multi-round input state.
    pub(crate) seal: StateSeal,
    /// Background tasks and where they are recorded.
    pub(crate) tasks: crate::task::Tasks,
    /// Confirmation tokens and idempotency keys, in the store.
    pub(crate) ledger: crate::ledger::Ledger,
    /// Rate limits and the audit trail, around every call.
    pub(crate) guards: Arc<crate::pipeline::Guards>,
    /// The `subscriptions/listen` streams open, within their caps.
    pub(crate) streams: streams::Streams,
    /// The skills the builder was given and those set since (each snapshot serves them).
    pub(crate) skills: Mutex<crate::skill::Skills>,
    /// The metrics (and where to serve them) and the tracer the builder installed.
    pub(crate) instruments: crate::instruments::Instruments,
    /// Whether the server drains, told to stop.
    pub(crate) drain: Drain,
}

impl Inner {
    /// What the views list: with `site_id` or without, in which schema profile.
    pub(crate) fn listing(&self) -> Listing {
        Listing {
            site: self.site.is_some(),
            profile: self.profile,
        }
    }

    /// What clients see now.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Derive a new snapshot from the current registry and swap it in; `None` when `change`
    /// leaves the registry as it is.
    fn change<T>(
        &self,
        change: impl FnOnce(&Registry) -> Result<Option<(Registry, T)>, ServerError>,
    ) -> Result<Option<T>, ServerError> {
        let surfaces = self.surfaces.lock().unwrap_or_else(PoisonError::into_inner);
        let current = self.snapshot();
        let Some((registry, out)) = change(&current.registry)? else {
            return Ok(None);
        };
        let skills = self
            .skills
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let next = Arc::new(Snapshot::new(
            registry,
            &surfaces,
            &self.state,
            self.listing(),
            &skills,
        )?);
        *self
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = next;
        Ok(Some(out))
    }
}

/// An MCP server over one registry. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
    /// The view slot this server presents.
    pub(crate) slot: usize,
    pub(crate) surface: Arc<Surface>,
}

impl Server {
    /// Start building a server.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// The tools as `tools/list` reports them on this server's surface (native:
    /// `get_site_context` when the server has a site, then one per tool ability), every page.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.snapshot().view(self.slot).tools.clone()
    }

    /// The surface this server presents.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The same server (registry, state, subscriptions) presenting another surface. Fails
    /// as [`ServerBuilder::build`] would for that surface (MCP-AQL operation names that
    /// collide).
    pub fn with_surface(&self, surface: Surface) -> Result<Server, ServerError> {
        let mut surfaces = self
            .inner
            .surfaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let current = self.inner.snapshot();
        let view = Arc::new(View::new(
            surface.clone(),
            &current.registry,
            self.inner.listing(),
        )?);
        let mut views = current.views.clone();
        views.push(view);
        surfaces.push(surface.clone());
        let next = Snapshot {
            registry: current.registry.clone(),
            views,
            catalog: Arc::clone(&current.catalog),
            skills: Arc::clone(&current.skills),
            capabilities: current.capabilities.clone(),
        };
        *self
            .inner
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        Ok(Server {
            inner: Arc::clone(&self.inner),
            slot: surfaces.len() - 1,
            surface: Arc::new(surface),
        })
    }

    /// The registry served now.
    pub fn registry(&self) -> Registry {
        self.inner.snapshot().registry.clone()
    }

    /// The abilities of the running server, to add and remove.
    pub fn abilities(&self) -> ServedAbilities<'_> {
        ServedAbilities { server: self }
    }

    /// The skills of the running server, to set by group.
    pub fn skills(&self) -> ServedSkills<'_> {
        ServedSkills { server: self }
    }

    /// Notifies subscribers that a resource changed (abilities get the same notifier as
    /// `State<ResourceNotifier>`).
    pub fn resource_notifier(&self) -> &ResourceNotifier {
        &self.inner.notifier
    }
}

/// The abilities of a running [`Server`]: add and remove them while clients are connected.
/// Each change rebuilds the tool lists once and tells every connected client
/// (`notifications/tools/list_changed`, and `resources/list_changed` or
/// `prompts/list_changed` for those kinds).
///
/// ```standalone_crate
/// use abilities::{Ability, Semantic, Server};
/// use serde_json::{Value, json};
///
/// let server = Server::builder().build().unwrap();
/// let ping = Ability::builder("ping", Semantic::Read)
///     .description("Answer pong.")
///     .handler(|_ctx, _args: Value| async move { Ok(json!("pong")) })
///     .build()
///     .unwrap();
/// server.abilities().add(ping).unwrap();
/// assert_eq!(server.tools()[0].name, "ping");
/// server.abilities().remove("ping").unwrap();
/// assert!(server.tools().is_empty());
/// ```
pub struct ServedAbilities<'a> {
    server: &'a Server,
}

impl ServedAbilities<'_> {
    /// Serve `ability` from now on. Fails, changing nothing, when its name or tool name is
    /// taken (by another ability or a built-in tool), its resource URI is served, an MCP-AQL
    /// operation name would collide, or it takes a `State<T>` the server was not given.
    pub fn add(&self, ability: Ability) -> Result<(), ServerError> {
        let lists = Lists::of(&ability);
        let inner = &self.server.inner;
        inner.change(|registry| Ok(Some((registry.with(ability)?, ()))))?;
        inner.listeners.changed(lists);
        Ok(())
    }

    /// Stop serving the ability named `name` (ability or tool name) and return it.
    pub fn remove(&self, name: &str) -> Result<Arc<Ability>, ServerError> {
        let inner = &self.server.inner;
        let removed = inner
            .change(|registry| Ok(registry.without(name)))?
            .ok_or_else(|| ServerError::UnknownAbility(name.chars().take(100).collect()))?;
        inner.listeners.changed(Lists::of(&removed));
        Ok(removed)
    }

    /// Whether an ability of this name (or tool name) is served.
    pub fn contains(&self, name: &str) -> bool {
        self.server.inner.snapshot().registry.get(name).is_some()
    }
}

/// The skills a running server serves besides those it was built with: groups of skills set,
/// replaced and cleared while it runs. See [`Server::skills`].
pub struct ServedSkills<'a> {
    server: &'a Server,
}

impl ServedSkills<'_> {
    /// Serve `skills` as the group `group` from now on, instead of what the group held (an
    /// empty list clears it). Fails, changing nothing, when two skills would have one path.
    /// Clients that listen for resource list changes are told.
    ///
    /// ```
    /// use abilities::{Server, skill::Skill};
    ///
    /// let server = Server::builder().build()?;
    /// let pdf = Skill::new("upstream/pdf", [("SKILL.md", "---\nname: pdf\ndescription: PDFs.\n---\n")])?;
    /// server.skills().set("upstream", vec![pdf])?;
    /// server.skills().set("upstream", Vec::new())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set(&self, group: &str, skills: Vec<crate::Skill>) -> Result<(), ServerError> {
        let inner = &self.server.inner;
        let surfaces = inner
            .surfaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut held = inner.skills.lock().unwrap_or_else(PoisonError::into_inner);
        // The same skills again (an upstream listed anew): nothing to rebuild or announce.
        let was = held.groups.get(group).map_or(&[][..], Vec::as_slice);
        if was.len() == skills.len() && was.iter().zip(&skills).all(|(a, b)| a.same_as(b)) {
            return Ok(());
        }
        let mut next = held.clone();
        let mut groups = (*next.groups).clone();
        if skills.is_empty() {
            groups.remove(group);
        } else {
            groups.insert(group.to_owned(), skills);
        }
        next.groups = Arc::new(groups);
        let current = inner.snapshot();
        let snapshot = Arc::new(Snapshot::new(
            current.registry.clone(),
            &surfaces,
            &inner.state,
            inner.listing(),
            &next,
        )?);
        *held = next;
        *inner
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = snapshot;
        drop(held);
        drop(surfaces);
        inner.listeners.changed(Lists {
            resources: true,
            ..Lists::default()
        });
        Ok(())
    }
}

/// Check that every tool ability of `registry` has a form in `profile`; the error names the
/// first that has none.
fn check_profile(
    profile: crate::SchemaProfile,
    registry: &Registry,
    site: bool,
) -> Result<(), crate::ServerError> {
    if profile == crate::SchemaProfile::Portable {
        return Ok(());
    }
    for ability in registry.iter().filter(|a| a.is_tool()) {
        if let Err(error) = crate::profile::apply(profile, ability.listed_input_schema(site)) {
            return Err(crate::ServerError::SchemaProfile {
                ability: ability.name().to_owned(),
                at: ability.location(),
                profile,
                pointer: error.pointer,
                problem: error.problem,
            });
        }
    }
    Ok(())
}

/// What a server missing the state `state` (a type name) needs: for an `Arc<T>`, that
/// `.shared_state(Arc<T>)` registers the `T` (so the ability takes `State<T>`).
fn state_hint(state: &str) -> String {
    match state
        .strip_prefix("alloc::sync::Arc<")
        .and_then(|inner| inner.strip_suffix('>'))
    {
        Some(inner) => format!(
            "`.shared_state(Arc<T>)` registers the `T`, so take `State<{inner}>` (it reads \
             the same shared value); `.state(..)` of an `Arc<{inner}>` would register the `Arc`"
        ),
        None => "add `.state(..)` or `.shared_state(..)` of that type to the builder".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::ServerError;

    #[test]
    fn missing_arc_state_names_what_shared_state_registers() {
        let error = ServerError::MissingState {
            ability: "count".into(),
            at: "src/lib.rs:3".into(),
            state: "alloc::sync::Arc<app::Store>",
        };
        assert_eq!(
            error.to_string(),
            "ability `count` (src/lib.rs:3) takes `State<alloc::sync::Arc<app::Store>>`, but the \
             server has no `alloc::sync::Arc<app::Store>`: `.shared_state(Arc<T>)` registers the \
             `T`, so take `State<app::Store>` (it reads the same shared value); `.state(..)` of \
             an `Arc<app::Store>` would register the `Arc`"
        );
    }
}
