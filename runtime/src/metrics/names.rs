//! The names families take: each noted as it is served, so an application's family never
//! writes series under a name the server's own (or another's) already writes.

use prometheus_client::registry::{Metric, Registry, Unit};

/// Why [`Metrics::register`](super::Metrics::register) refused a family.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Not a Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
    #[error("`{0}` is not a Prometheus metric name")]
    InvalidName(String),
    /// Its series would have the names of a family served already.
    #[error("`abilities_{name}` would clash with `{family}`, served already")]
    Taken {
        /// The name asked for.
        name: String,
        /// The family it clashes with.
        family: String,
    },
}

/// `name`, noted in `names`.
fn named<'a>(names: &mut Vec<String>, name: &'a str) -> &'a str {
    names.push(name.to_owned());
    name
}

/// `name` of a family in seconds, noted in `names` as it is served (`<name>_seconds`).
fn seconds<'a>(names: &mut Vec<String>, name: &'a str) -> &'a str {
    names.push(format!("{name}_seconds"));
    name
}

/// The registry families are added to as the metrics are made, and the names they take.
pub(super) struct Families<'a> {
    pub(super) registry: &'a mut Registry,
    pub(super) names: &'a mut Vec<String>,
}

impl Families<'_> {
    /// `metric`, registered as `name` with `help`; a handle on it.
    pub(super) fn plain<M: Metric + Clone>(&mut self, name: &str, help: &str, metric: M) -> M {
        self.registry
            .register(named(self.names, name), help, metric.clone());
        metric
    }

    /// `metric`, registered as `name` in seconds with `help`; a handle on it.
    pub(super) fn seconds<M: Metric + Clone>(&mut self, name: &str, help: &str, metric: M) -> M {
        self.registry.register_with_unit(
            seconds(self.names, name),
            help,
            Unit::Seconds,
            metric.clone(),
        );
        metric
    }
}

/// Whether families named `a` and `b` would write series of one name: the same name, or one
/// the other with a suffix Prometheus adds (`_total`, `_bucket`, ...).
pub(super) fn clashes(a: &str, b: &str) -> bool {
    const SUFFIXES: [&str; 6] = ["total", "created", "bucket", "sum", "count", "info"];
    let under = |longer: &str, shorter: &str| {
        longer
            .strip_prefix(shorter)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|suffix| SUFFIXES.contains(&suffix))
    };
    a == b || under(a, b) || under(b, a)
}
