//! Who is calling: a principal, its scopes, and whether it was let in without credentials.

use std::collections::BTreeSet;
use std::sync::Arc;

/// Who is calling: a principal and the scopes it holds.
///
/// Scopes are checked against `#[ability(permission = "...")]` before the handler runs.
/// Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(Arc<CallerInner>);

#[derive(Debug, PartialEq, Eq)]
struct CallerInner {
    principal: String,
    scopes: Scopes,
    /// Let in without credentials: many clients may share the principal.
    anonymous: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum Scopes {
    All,
    Only(BTreeSet<String>),
}

impl Caller {
    /// A caller holding exactly `scopes`.
    pub fn new<S: Into<String>>(
        principal: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        let scopes = scopes.into_iter().map(Into::into).collect();
        Self(Arc::new(CallerInner {
            principal: principal.into(),
            scopes: Scopes::Only(scopes),
            anonymous: false,
        }))
    }

    /// A caller holding every scope: in-process code and locally configured transports.
    pub fn trusted(principal: impl Into<String>) -> Self {
        Self(Arc::new(CallerInner {
            principal: principal.into(),
            scopes: Scopes::All,
            anonymous: false,
        }))
    }

    /// A caller with no scopes at all.
    pub fn anonymous() -> Self {
        // One shared value: every unauthenticated request has this caller.
        static ANONYMOUS: std::sync::LazyLock<Caller> = std::sync::LazyLock::new(|| {
            Caller::new("anonymous", std::iter::empty::<String>()).into_anonymous()
        });
        ANONYMOUS.clone()
    }

    /// This caller, marked as let in without credentials (see
    /// [`is_anonymous`](Self::is_anonymous)).
    pub(crate) fn into_anonymous(self) -> Self {
        if self.0.anonymous {
            return self;
        }
        Self(Arc::new(CallerInner {
            principal: self.0.principal.clone(),
            scopes: match &self.0.scopes {
                Scopes::All => Scopes::All,
                Scopes::Only(scopes) => Scopes::Only(scopes.clone()),
            },
            anonymous: true,
        }))
    }

    /// Whether the caller was let in without credentials ([`Caller::anonymous`], or the
    /// caller an authenticator lets anonymous requests in as): its principal names no one
    /// in particular, so what is bound to a caller (confirmation tokens, idempotency keys)
    /// is bound to its session or client instead.
    pub fn is_anonymous(&self) -> bool {
        self.0.anonymous
    }

    /// The principal's name.
    pub fn principal(&self) -> &str {
        &self.0.principal
    }

    /// Whether the caller holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        match &self.0.scopes {
            Scopes::All => true,
            Scopes::Only(scopes) => scopes.contains(scope),
        }
    }
}

impl Default for Caller {
    /// [`Caller::anonymous`]: no scopes. A caller that may do everything is always explicit,
    /// [`Caller::trusted`].
    fn default() -> Self {
        Self::anonymous()
    }
}
