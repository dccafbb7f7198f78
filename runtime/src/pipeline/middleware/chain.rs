//! The chain a call goes through: the server's own concerns as links, a user's middleware
//! between them, in an order the builder can change.

use std::sync::Arc;

use super::Middleware;

/// One of the server's own concerns, as a link of its [`Chain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Builtin {
    /// The server's traces ([`ServerBuilder::otel`](crate::ServerBuilder), feature `otel`):
    /// one span per call, the rest of the call inside it. Does nothing on a server that does
    /// not trace.
    Traces,
    /// The server's metrics ([`ServerBuilder::metrics`](crate::ServerBuilder), feature
    /// `metrics`): every call counted by ability, surface and outcome, and timed, however
    /// it ends. Does nothing on a server without metrics.
    Metrics,
    /// The audit trail ([`ServerBuilder::audit_log`](crate::ServerBuilder::audit_log)):
    /// watches every call and records one event however it ends.
    Audit,
    /// The caller holds the ability's scope (`PERMISSION_DENIED`, HTTP `403`).
    Permission,
    /// The caller's budget for the ability (`RATE_LIMITED`, HTTP `429`).
    Rate,
    /// `site_id` taken out of the arguments and refused if it names another site
    /// (`SITE_MISMATCH`).
    Site,
    /// A dangerous operation waits for the user's confirmation (MCP-AQL's gate: asked by
    /// elicitation, or a `CONFIRMATION_REQUIRED` token to retry with). It runs among the
    /// validated arguments, where the chain puts it: last by default, so no one is asked to
    /// confirm a call a check would refuse. Without it, nothing is confirmed.
    Confirmation,
    /// Idempotency keys (`_meta` of `tools/call`, MCP-AQL's `_idempotency_key`): a call with
    /// a key runs at most once, and its retries get its first answer. It answers a retry
    /// before any other link runs, so it stands outside them wherever it is listed. Without
    /// it, a call that carries a key is refused: a key the server would not keep is never
    /// silently ignored.
    Idempotency,
}

impl Builtin {
    /// Its name in a chain: `idempotency`, `traces`, `metrics`, `audit`, `permission`,
    /// `rate`, `site`, `confirmation`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Idempotency => "idempotency",
            Self::Confirmation => "confirmation",
            Self::Traces => "traces",
            Self::Metrics => "metrics",
            Self::Audit => "audit",
            Self::Permission => "permission",
            Self::Rate => "rate",
            Self::Site => "site",
        }
    }
}

/// One link of a [`Chain`].
#[derive(Clone)]
pub(crate) enum Link {
    Builtin(Builtin),
    User(Arc<dyn Middleware>),
}

/// The ordered links of a server's calls: its built-in concerns and its middleware.
///
/// [`Chain::default`] is the built-ins in their order (idempotency, traces, metrics, audit,
/// permission, rate, site, confirmation).
///
/// ```
/// use abilities::Server;
/// use abilities::middleware::{Builtin, Chain};
///
/// // The rate counted before the permission check, and no site check.
/// let chain = Chain::default()
///     .without(Builtin::Site)
///     .move_before(Builtin::Rate, Builtin::Permission);
/// assert_eq!(
///     chain.names(),
///     ["idempotency", "traces", "metrics", "audit", "rate", "permission", "confirmation"]
/// );
/// let server = Server::builder().chain(chain).build().unwrap();
/// # drop(server);
/// ```
#[derive(Clone)]
#[must_use]
pub struct Chain {
    pub(crate) links: Vec<Link>,
}

impl Default for Chain {
    fn default() -> Self {
        Self {
            links: [
                Builtin::Idempotency,
                Builtin::Traces,
                Builtin::Metrics,
                Builtin::Audit,
                Builtin::Permission,
                Builtin::Rate,
                Builtin::Site,
                Builtin::Confirmation,
            ]
            .map(Link::Builtin)
            .to_vec(),
        }
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Chain {
    /// A chain with no links at all, not even the built-ins: nothing is confirmed, no
    /// permission or rate is checked, and a call that carries an idempotency key is refused.
    pub fn empty() -> Self {
        Self { links: Vec::new() }
    }

    /// `middleware` added at the end, or just before `confirmation` when it stands last
    /// (as it does by default): no one is asked to confirm a call a check would refuse.
    pub fn with(mut self, middleware: impl Middleware) -> Self {
        let at = match self.links.last() {
            Some(Link::Builtin(Builtin::Confirmation)) => self.links.len() - 1,
            _ => self.links.len(),
        };
        self.links.insert(at, Link::User(Arc::new(middleware)));
        self
    }

    /// `middleware` added just before `builtin` (at the end if the chain lacks it).
    pub fn with_before(mut self, builtin: Builtin, middleware: impl Middleware) -> Self {
        let at = self.position(builtin).unwrap_or(self.links.len());
        self.links.insert(at, Link::User(Arc::new(middleware)));
        self
    }

    /// The chain without `builtin`.
    pub fn without(mut self, builtin: Builtin) -> Self {
        self.links
            .retain(|link| !matches!(link, Link::Builtin(b) if *b == builtin));
        self
    }

    /// `builtin` added at the end (once: a built-in already there stays where it is).
    pub fn with_builtin(mut self, builtin: Builtin) -> Self {
        if self.position(builtin).is_none() {
            self.links.push(Link::Builtin(builtin));
        }
        self
    }

    /// `builtin` moved just before `anchor` (nothing changes if either is missing).
    pub fn move_before(mut self, builtin: Builtin, anchor: Builtin) -> Self {
        if builtin == anchor {
            return self;
        }
        if let (Some(from), Some(_)) = (self.position(builtin), self.position(anchor)) {
            let link = self.links.remove(from);
            let to = self.position(anchor).unwrap_or(self.links.len());
            self.links.insert(to, link);
        }
        self
    }

    /// The links' names, in order: a built-in's [`name`](Builtin::name), a middleware's
    /// [`name`](Middleware::name).
    pub fn names(&self) -> Vec<&str> {
        self.links
            .iter()
            .map(|link| match link {
                Link::Builtin(builtin) => builtin.name(),
                Link::User(middleware) => middleware.name(),
            })
            .collect()
    }

    fn position(&self, builtin: Builtin) -> Option<usize> {
        self.links
            .iter()
            .position(|link| matches!(link, Link::Builtin(b) if *b == builtin))
    }

    /// The middleware's links, in order (for their `around`s).
    pub(crate) fn users(&self) -> Arc<[Arc<dyn Middleware>]> {
        self.links
            .iter()
            .filter_map(|link| match link {
                Link::User(middleware) => Some(Arc::clone(middleware)),
                Link::Builtin(_) => None,
            })
            .collect()
    }
}
