//! What a server counts, for Prometheus (feature `metrics`): calls by ability, surface and
//! outcome, call latency by ability, tasks, sessions and listen streams against their caps,
//! confirmation tokens, rate-limit refusals and store latency; an application adds its own
//! families with [`Metrics::register`] (the bridge its upstreams').
//!
//! Every label's values come from a bounded set: an ability's name is a label only once the
//! call found the ability (a tool name a client made up never is), a surface is one of a
//! fixed few, an outcome is an [`ErrorCode`] or `OK`. Per-call work is two
//! clock reads, a histogram observation and an atomic addition: an ability keeps its series
//! in a slot of its own, made at its first call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use std::time::Instant;

mod config;
mod names;

pub use config::MetricsConfig;
pub use names::RegisterError;
use names::{Families, clashes};
pub use prometheus_client;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::ErrorCode;
use crate::ability::Slot;

/// The `Content-Type` of [`Metrics::encode`]'s text (the Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The surfaces a call can come through: the only values of the `surface` label.
const VIAS: [&str; 8] = [
    "native",
    "standard",
    "meta",
    "aql",
    "resource",
    "prompt",
    "task",
    "in-process",
];

fn via_index(via: &str) -> usize {
    VIAS.iter()
        .position(|v| *v == via)
        .unwrap_or(VIAS.len() - 1)
}

/// Latency buckets, in seconds: from 100 us (a call that only reads memory) to 10 s.
const LATENCY: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0,
];

fn latency() -> Histogram {
    Histogram::new(LATENCY)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    ability: Arc<str>,
    surface: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AbilityLabel {
    ability: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabel {
    event: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: &'static str,
}

/// Benchmarks only: what the pipeline does to count one successful call, alone.
#[doc(hidden)]
#[derive(Default)]
pub struct Probe(Slot);

impl Probe {
    /// Time and count one successful call of `name` on the native surface in `metrics`.
    pub fn call(&self, metrics: &Metrics, name: &str) {
        metrics.start(&self.0, name, "native").finish(Ok(()));
    }
}

/// One ability's series, made at its first call: the successful calls by surface and the
/// latency histogram.
pub(crate) struct PerAbility {
    name: Arc<str>,
    ok: [OnceLock<Counter>; VIAS.len()],
    duration: Histogram,
}

/// What a server counts, and its Prometheus exposition.
///
/// ```
/// use abilities::{Server, ability};
/// use abilities::metrics::MetricsConfig;
///
/// /// Say hello.
/// #[ability(semantic = "READ", flatten, name = "doc/hello")]
/// fn hello(name: String) -> String { format!("Hello, {name}") }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Server::builder().metrics(MetricsConfig::default()).build()?;
/// server.connect().await?.call("doc-hello", serde_json::json!({"input": "Ada"})).await?;
/// let text = server.metrics().expect("configured").encode();
/// assert!(text.contains(
///     r#"abilities_calls_total{ability="doc/hello",surface="native",outcome="OK"} 1"#
/// ));
/// # Ok(()) }
/// ```
pub struct Metrics {
    /// Tells this server's series apart in an ability's [`Slot`].
    id: usize,
    /// Locked to encode, and to register an application's own families.
    registry: RwLock<Registry>,
    /// The name of every family registered (a unit's suffix included).
    names: Mutex<Vec<String>>,
    calls: Family<CallLabels, Counter>,
    durations: Family<AbilityLabel, Histogram, fn() -> Histogram>,
    rate_limited: Family<AbilityLabel, Counter>,
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "counted by the MCP-AQL surface")
    )]
    confirmations: Family<EventLabel, Counter>,
    tasks_ended: Family<StatusLabel, Counter>,
    tasks: Family<StatusLabel, Gauge>,
    store: Family<OperationLabel, Histogram, fn() -> Histogram>,
    held: Held,
    abilities: RwLock<HashMap<Box<str>, Arc<PerAbility>>>,
    /// Read at each scrape: the figures that are a state (open sessions, running tasks),
    /// set by the floors that hold them.
    samplers: Mutex<Vec<Sampler>>,
    /// Each HTTP endpoint's open sessions (`None` once the endpoint is gone), added up at
    /// each scrape.
    session_counts: Mutex<Vec<SessionCount>>,
}

/// The figures that are a state against their caps, read at each scrape.
struct Held {
    tasks_max: Gauge,
    sessions: Gauge,
    sessions_max: Gauge,
    streams: Gauge,
    streams_max: Gauge,
}

impl Held {
    fn new(add: &mut Families<'_>) -> Self {
        let tasks_max = add.plain(
            "tasks_max",
            "How many tasks the server runs at once (every replica of its store)",
            Gauge::default(),
        );
        let sessions = add.plain(
            "sessions",
            "Open MCP sessions (protocol 2025) on this process's HTTP endpoints",
            Gauge::default(),
        );
        let sessions_max = add.plain(
            "sessions_max",
            "How many sessions an HTTP endpoint holds at once",
            Gauge::default(),
        );
        let streams = add.plain(
            "listen_streams",
            "Open subscriptions/listen streams",
            Gauge::default(),
        );
        let streams_max = add.plain(
            "listen_streams_max",
            "How many subscriptions/listen streams the server holds at once",
            Gauge::default(),
        );
        Self {
            tasks_max,
            sessions,
            sessions_max,
            streams,
            streams_max,
        }
    }
}

/// What sets a figure that is a state, at each scrape.
type Sampler = Box<dyn Fn(&Metrics) + Send + Sync>;

/// How many sessions one endpoint holds: read at a scrape, the last figure kept for when it
/// cannot be read at once.
type SessionCount = (Box<dyn Fn() -> Option<Option<usize>> + Send + Sync>, usize);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("abilities");
        // The name of every family, for `register` to refuse a clash with.
        let mut names = Vec::new();
        let mut add = Families {
            registry: &mut registry,
            names: &mut names,
        };
        let calls = add.plain(
            "calls",
            "Ability calls by ability, surface and outcome (OK or the error code)",
            Family::<CallLabels, Counter>::default(),
        );
        let durations = add.seconds(
            "call_duration",
            "How long ability calls took, from the first check to the outcome",
            Family::<AbilityLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                latency as fn() -> Histogram,
            ),
        );
        let rate_limited = add.plain(
            "rate_limited",
            "Calls refused by a rate limit, by ability",
            Family::<AbilityLabel, Counter>::default(),
        );
        let confirmations = add.plain(
            "confirmations",
            "Confirmation tokens issued, redeemed and refused",
            Family::<EventLabel, Counter>::default(),
        );
        let tasks = add.plain(
            "tasks",
            "Tasks this process runs, by status",
            Family::<StatusLabel, Gauge>::default(),
        );
        let tasks_ended = add.plain(
            "tasks_ended",
            "Tasks this process ran to their end, by final status",
            Family::<StatusLabel, Counter>::default(),
        );
        let held = Held::new(&mut add);
        let store = add.seconds(
            "store_operation_duration",
            "How long store operations took, by operation",
            Family::<OperationLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                latency as fn() -> Histogram,
            ),
        );
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        Self {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            registry: RwLock::new(registry),
            names: Mutex::new(names),
            calls,
            durations,
            rate_limited,
            confirmations,
            tasks_ended,
            tasks,
            store,
            held,
            abilities: RwLock::default(),
            samplers: Mutex::default(),
            session_counts: Mutex::default(),
        }
    }

    /// The exposition in the Prometheus text format ([`CONTENT_TYPE`]), read now.
    pub fn encode(&self) -> String {
        for sample in self
            .samplers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            sample(self);
        }
        let open = {
            let mut counts = self
                .session_counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            counts.retain_mut(|(read, last)| match read() {
                None => false,
                Some(now) => {
                    *last = now.unwrap_or(*last);
                    true
                }
            });
            counts.iter().map(|(_, last)| last).sum::<usize>()
        };
        self.held.sessions.set(to_i64(open));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let registry = self.registry.read().unwrap_or_else(PoisonError::into_inner);
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
        text
    }

    /// Serve a family of the application's own beside the server's, under the same
    /// `abilities_` prefix: `name` and `help` as Prometheus shows them, `metric` any
    /// [`prometheus_client`] metric, kept by the caller to count with. Registered once, it is
    /// in every exposition from then on. A name that is no Prometheus name, or one whose
    /// series would clash with a family served already (the server's or an earlier one:
    /// `calls`, `calls_total`), is refused, as Prometheus would refuse the whole scrape. Not
    /// to be called while the exposition is written (from a metric's own encoding).
    ///
    /// ```
    /// use abilities::metrics::prometheus_client::metrics::counter::Counter;
    /// use abilities::{Server, metrics::MetricsConfig};
    ///
    /// let server = Server::builder().metrics(MetricsConfig::default()).build().unwrap();
    /// let exports = Counter::<u64>::default();
    /// let metrics = server.metrics().unwrap();
    /// metrics.register("exports", "Exports written", exports.clone()).unwrap();
    /// exports.inc();
    /// assert!(metrics.encode().contains("abilities_exports_total 1"));
    /// // The server counts its calls already.
    /// assert!(metrics.register("calls", "Mine", Counter::<u64>::default()).is_err());
    /// ```
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) -> Result<(), RegisterError> {
        let valid = name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
        });
        if name.is_empty() || !valid {
            return Err(RegisterError::InvalidName(name.to_owned()));
        }
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(family) = names.iter().find(|family| clashes(family, name)) {
            return Err(RegisterError::Taken {
                name: name.to_owned(),
                family: format!("abilities_{family}"),
            });
        }
        names.push(name.to_owned());
        self.registry
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .register(name, help, metric);
        Ok(())
    }

    /// Have `sample` set the figures that are a state before each scrape.
    pub(crate) fn sample(&self, sample: impl Fn(&Metrics) + Send + Sync + 'static) {
        self.samplers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(sample));
    }

    /// The start of a call of the ability `name`, whose series `slot` keeps, through `via`.
    pub(crate) fn start<'a>(
        &'a self,
        slot: &'a Slot,
        name: &str,
        via: &'static str,
    ) -> CallTimer<'a> {
        let kept = slot.0.get_or_init(|| {
            (
                self.id,
                self.by_name(name) as Arc<dyn std::any::Any + Send + Sync>,
            )
        });
        let ability = match kept {
            (id, kept) if *id == self.id => match kept.downcast_ref::<PerAbility>() {
                Some(ability) => Series::Kept(ability),
                None => Series::Found(self.by_name(name)),
            },
            // Another server's metrics counted this ability first.
            _ => Series::Found(self.by_name(name)),
        };
        CallTimer {
            metrics: self,
            ability,
            via: via_index(via),
            started: Instant::now(),
        }
    }

    /// The series of the ability `name`, made at its first call.
    fn by_name(&self, name: &str) -> Arc<PerAbility> {
        let found = self
            .abilities
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned();
        found.unwrap_or_else(|| self.first_call(name))
    }

    #[cold]
    fn first_call(&self, name: &str) -> Arc<PerAbility> {
        let mut abilities = self
            .abilities
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = abilities.entry(name.into()).or_insert_with(|| {
            let name: Arc<str> = name.into();
            let duration = self.durations.get_or_create_owned(&AbilityLabel {
                ability: Arc::clone(&name),
            });
            Arc::new(PerAbility {
                name,
                ok: Default::default(),
                duration,
            })
        });
        Arc::clone(entry)
    }

    /// A confirmation token `issued`, `redeemed` or `refused`.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "counted by the MCP-AQL surface")
    )]
    pub(crate) fn confirmation(&self, event: &'static str) {
        self.confirmations
            .get_or_create(&EventLabel { event })
            .inc();
    }

    /// A task this process ran ended with `status`.
    pub(crate) fn task_ended(&self, status: &'static str) {
        self.tasks_ended
            .get_or_create(&StatusLabel { status })
            .inc();
    }

    /// How many tasks this process runs with `status` now.
    pub(crate) fn set_tasks(&self, status: &'static str, count: usize) {
        self.tasks
            .get_or_create(&StatusLabel { status })
            .set(to_i64(count));
    }

    /// The cap on running tasks.
    pub(crate) fn set_tasks_max(&self, max: usize) {
        self.held.tasks_max.set(to_i64(max));
    }

    /// Count the sessions of an HTTP endpoint that holds at most `max`: `read` says how
    /// many it holds (`Some(None)` when that cannot be read at once, `None` once the endpoint
    /// is gone).
    pub(crate) fn count_sessions(
        &self,
        read: impl Fn() -> Option<Option<usize>> + Send + Sync + 'static,
        max: usize,
    ) {
        self.held.sessions_max.set(to_i64(max));
        self.session_counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((Box::new(read), 0));
    }

    /// Open listen streams and their cap.
    pub(crate) fn set_streams(&self, open: usize, max: usize) {
        self.held.streams.set(to_i64(open));
        self.held.streams_max.set(to_i64(max));
    }

    /// A store operation took `seconds`.
    pub(crate) fn store_operation(&self, operation: &'static str, seconds: f64) {
        self.store
            .get_or_create(&OperationLabel { operation })
            .observe(seconds);
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An ability's series, as a call holds them.
enum Series<'a> {
    /// Kept in the ability's slot.
    Kept(&'a PerAbility),
    /// Found by name (the slot holds another server's).
    Found(Arc<PerAbility>),
}

impl std::ops::Deref for Series<'_> {
    type Target = PerAbility;

    fn deref(&self) -> &PerAbility {
        match self {
            Self::Kept(series) => series,
            Self::Found(series) => series,
        }
    }
}

/// A call being timed: [`finish`](Self::finish) counts it.
pub(crate) struct CallTimer<'a> {
    metrics: &'a Metrics,
    ability: Series<'a>,
    /// The surface, as its place in [`VIAS`].
    via: usize,
    started: Instant,
}

impl CallTimer<'_> {
    /// Count the call as ended with `outcome` (`Ok`, or the error's code).
    pub(crate) fn finish(self, outcome: Result<(), &crate::ErrorCode>) {
        let seconds = self.started.elapsed().as_secs_f64();
        self.ability.duration.observe(seconds);
        match outcome {
            Ok(()) => {
                self.ability.ok[self.via]
                    .get_or_init(|| {
                        self.metrics.calls.get_or_create_owned(&CallLabels {
                            ability: Arc::clone(&self.ability.name),
                            surface: VIAS[self.via],
                            outcome: "OK",
                        })
                    })
                    .inc();
            }
            Err(code) => {
                if code == &crate::ErrorCode::RateLimited {
                    self.metrics
                        .rate_limited
                        .get_or_create(&AbilityLabel {
                            ability: Arc::clone(&self.ability.name),
                        })
                        .inc();
                }
                self.metrics
                    .calls
                    .get_or_create(&CallLabels {
                        ability: Arc::clone(&self.ability.name),
                        surface: VIAS[self.via],
                        outcome: code_label(code),
                    })
                    .inc();
            }
        }
    }
}

/// An error code as a label with a bounded set of values: a framework code, an application
/// code written as a `&'static str`, or `CUSTOM` for one made at run time.
fn code_label(code: &ErrorCode) -> &'static str {
    static FRAMEWORK: [ErrorCode; 31] = ErrorCode::FRAMEWORK;
    match code {
        ErrorCode::Custom(Cow::Borrowed(code)) => code,
        ErrorCode::Custom(Cow::Owned(_)) => "CUSTOM",
        known => FRAMEWORK
            .iter()
            .find(|framework| *framework == known)
            .map_or("CUSTOM", ErrorCode::as_str),
    }
}
