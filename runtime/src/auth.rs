//! Who is calling over HTTP: bearer tokens mapped to a principal and scopes.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use axum::http::request::Parts;

use crate::Caller;

/// The future an [`Authenticator`] returns.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Caller, AuthError>> + Send + 'a>>;

/// Why an HTTP request was refused before reaching any ability.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer` header, and anonymous callers are not allowed.
    #[error("missing bearer token")]
    MissingToken,
    /// The token is not known.
    #[error("invalid bearer token")]
    InvalidToken,
    /// The `Authorization` header is not one `Bearer <token>`: another scheme, an empty
    /// token, several headers. Refused, never taken for an anonymous request.
    #[error("malformed Authorization header: {0}")]
    MalformedAuthorization(&'static str),
    /// The token was read and refused, for the reason given (expired, another audience...).
    #[error("invalid bearer token: {0}")]
    Rejected(String),
}

impl AuthError {
    /// The `WWW-Authenticate` challenge of the 401 answer (RFC 6750 §3).
    pub fn challenge(&self) -> &'static str {
        match self {
            Self::MissingToken => "Bearer",
            Self::InvalidToken | Self::Rejected(_) => r#"Bearer error="invalid_token""#,
            Self::MalformedAuthorization(_) => r#"Bearer error="invalid_request""#,
        }
    }
}

/// Decides who an HTTP request comes from. Implement it to check tokens against your own store;
/// [`StaticTokens`] is a fixed table.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an `Authenticator`",
    label = "cannot decide who a request comes from",
    note = "implement `abilities::auth::Authenticator` for it (`authenticate` reads the request's headers), or use `StaticTokens`"
)]
pub trait Authenticator: Send + Sync + 'static {
    /// The caller of a request, from its head (headers, extensions...).
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a>;

    /// The RFC 9728 protected resource metadata to serve at
    /// `/.well-known/oauth-protected-resource`, for an OAuth resource server; `None` (the
    /// default) serves none.
    fn resource_metadata(&self) -> Option<serde_json::Value> {
        None
    }

    /// The absolute URL of that document, named in every 401's `WWW-Authenticate`
    /// (`resource_metadata="..."`).
    fn resource_metadata_url(&self) -> Option<String> {
        None
    }
}

/// A fixed table of bearer tokens, each mapped to a caller; requests without a token get the
/// anonymous caller if one is set, or are refused.
///
/// ```
/// use abilities::{Caller, auth::StaticTokens};
///
/// let tokens = StaticTokens::new()
///     .with_token("s3cret", Caller::new("editor", ["posts:write", "posts:delete"]))
///     .allow_anonymous(Caller::anonymous());
/// # let _ = tokens;
/// ```
#[derive(Clone, Debug, Default)]
pub struct StaticTokens {
    tokens: HashMap<String, Caller>,
    anonymous: Option<Caller>,
}

impl StaticTokens {
    /// An empty table that refuses every request.
    pub fn new() -> Self {
        Self::default()
    }

    /// Map `token` to `caller`.
    #[must_use]
    pub fn with_token(mut self, token: impl Into<String>, caller: Caller) -> Self {
        self.tokens.insert(token.into(), caller);
        self
    }

    /// Let requests without a token in, as `caller` (marked
    /// [anonymous](Caller::is_anonymous)).
    #[must_use]
    pub fn allow_anonymous(mut self, caller: Caller) -> Self {
        self.anonymous = Some(caller.into_anonymous());
        self
    }

    fn lookup(&self, request: &Parts) -> Result<Caller, AuthError> {
        match bearer(request)? {
            Some(token) => self
                .tokens
                .get(token)
                .cloned()
                .ok_or(AuthError::InvalidToken),
            None => self.anonymous.clone().ok_or(AuthError::MissingToken),
        }
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
        Box::pin(std::future::ready(self.lookup(request)))
    }
}

/// The token of the request's one `Authorization: Bearer <token>` header: `Ok(None)` without
/// the header, an error when it is there but is not one well-formed bearer token (another
/// scheme such as `Basic`, an empty token, a value that is not visible ASCII, or two
/// `Authorization` headers), which a server must refuse rather than read as anonymous.
pub fn bearer(request: &Parts) -> Result<Option<&str>, AuthError> {
    let mut values = request
        .headers
        .get_all(axum::http::header::AUTHORIZATION)
        .iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AuthError::MalformedAuthorization(
            "several Authorization headers",
        ));
    }
    let value = value
        .to_str()
        .map_err(|_| AuthError::MalformedAuthorization("the value is not visible ASCII"))?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MalformedAuthorization(
            "the scheme is not Bearer",
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::MalformedAuthorization(
            "the bearer token is empty",
        ));
    }
    if token.contains(char::is_whitespace) {
        return Err(AuthError::MalformedAuthorization(
            "the bearer token contains spaces",
        ));
    }
    Ok(Some(token))
}

/// The token of an `Authorization: Bearer <token>` header, `None` when there is none or it is
/// malformed (see [`bearer`], which tells the two apart).
pub fn bearer_token(request: &Parts) -> Option<&str> {
    bearer(request).ok().flatten()
}
