//! An OAuth 2.1 resource server: JWT access tokens checked against the issuer's JWKS, as the
//! MCP authorization specification asks of servers (feature `jwt`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::http::request::Parts;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

use crate::Caller;
use crate::auth::{AuthError, AuthFuture, Authenticator, bearer};

/// Why a [`JwtAuthenticator`] could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtError {
    /// The JWKS could not be read or fetched.
    #[error("JWKS {source_name}: {problem}")]
    Jwks {
        /// The file or URL.
        source_name: String,
        /// What went wrong.
        problem: String,
    },
    /// The configuration cannot be used.
    #[error("JWT authenticator: {0}")]
    Config(String),
}

/// Validates `Authorization: Bearer` JWT access tokens issued by one authorization server
/// for one resource (this server), and makes each token's `sub` the caller's principal and
/// its scopes (`scope`, space-separated, or `scp`, a list) the caller's scopes.
///
/// - Signatures: only the asymmetric algorithms given (default RS256 and ES256); `alg: none`
///   and HMAC algorithms are never accepted, and a key is only used with its own algorithm.
/// - Claims: `iss` must be the issuer, `aud` must contain the resource (this server's
///   canonical URL), `exp` must be in the future and `nbf` (when present) in the past, with 30
///   seconds of leeway (see [`leeway`](JwtAuthenticatorBuilder::leeway)); `sub` is required.
/// - Keys: a JWKS from a file ([`jwks_file`](JwtAuthenticatorBuilder::jwks_file), for offline use), or fetched
///   from a URL ([`jwks_url`](JwtAuthenticatorBuilder::jwks_url), at start and again when a token names a key id
///   it does not have, at most every 10 s). Plain `http://` is accepted for loopback hosts
///   only; `https://` needs the `tls` feature.
/// - Refusals are `401` with `WWW-Authenticate: Bearer resource_metadata="..."` and the
///   RFC 6750 `error`; the server also serves the RFC 9728 metadata document at
///   `/.well-known/oauth-protected-resource` (and under the MCP path).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use abilities::{auth::JwtAuthenticator, Server};
///
/// let auth = JwtAuthenticator::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .scopes_supported(["posts:read", "posts:write"])
///     .jwks_url("https://auth.example.com/.well-known/jwks.json")
///     .await?;
/// let server = Server::builder().authenticator(auth).build()?;
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct JwtAuthenticator {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    scopes_supported: Vec<String>,
    anonymous: Option<Caller>,
    keys: RwLock<HashMap<String, (DecodingKey, Algorithm)>>,
    /// Keys without a `kid`: tried in turn for a token without one.
    unnamed: RwLock<Vec<(DecodingKey, Algorithm)>>,
    url: Option<String>,
    last_fetch: Mutex<Option<Instant>>,
    min_refresh: Duration,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.inner.issuer)
            .field("audience", &self.inner.audience)
            .field("algorithms", &self.inner.algorithms)
            .finish_non_exhaustive()
    }
}

/// A [`JwtAuthenticator`] being configured.
#[derive(Debug)]
#[must_use]
pub struct JwtAuthenticatorBuilder {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    scopes_supported: Vec<String>,
    anonymous: Option<Caller>,
    min_refresh: Duration,
}

impl JwtAuthenticator {
    /// Tokens of `issuer` (the `iss` claim, the authorization server's URL) for `audience`
    /// (this resource's canonical URL, e.g. `https://mcp.example.com/mcp`, the `aud` claim).
    #[allow(
        clippy::new_ret_no_self,
        reason = "the keys are loaded last, by the builder"
    )]
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> JwtAuthenticatorBuilder {
        JwtAuthenticatorBuilder {
            issuer: issuer.into(),
            audience: audience.into(),
            algorithms: vec![Algorithm::RS256, Algorithm::ES256],
            leeway: Duration::from_secs(30),
            scopes_supported: Vec::new(),
            anonymous: None,
            min_refresh: Duration::from_secs(10),
        }
    }

    /// The RFC 9728 protected resource metadata this authenticator publishes.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.inner.audience,
            "authorization_servers": [self.inner.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !self.inner.scopes_supported.is_empty() {
            metadata["scopes_supported"] = json!(self.inner.scopes_supported);
        }
        metadata
    }

    /// The absolute URL of the metadata document: the resource's origin, then
    /// `/.well-known/oauth-protected-resource`, then the resource's path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        metadata_url(&self.inner.audience)
    }

    fn verify(&self, token: &str) -> Result<Caller, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Malformed)?;
        if !self.inner.algorithms.contains(&header.alg) {
            return Err(Refusal::Algorithm);
        }
        let candidates: Vec<(DecodingKey, Algorithm)> = match &header.kid {
            Some(kid) => {
                let keys = self
                    .inner
                    .keys
                    .read()
                    .unwrap_or_else(PoisonError::into_inner);
                match keys.get(kid) {
                    Some(key) => vec![key.clone()],
                    None => return Err(Refusal::UnknownKey(kid.clone())),
                }
            }
            None => self
                .inner
                .unnamed
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        };
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.inner.issuer]);
        validation.set_audience(&[&self.inner.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = self.inner.leeway.as_secs();
        validation.validate_nbf = true;
        let mut last = Refusal::Signature;
        for (key, alg) in candidates {
            if alg != header.alg {
                last = Refusal::Algorithm;
                continue;
            }
            match jsonwebtoken::decode::<Value>(token, &key, &validation) {
                Ok(data) => return caller_of(&data.claims),
                Err(error) => last = Refusal::from(error.kind()),
            }
        }
        Err(last)
    }

    /// Fetch the JWKS again (a token named a key id not in it), unless it was fetched less
    /// than the minimum interval ago.
    async fn refresh(&self) -> bool {
        let Some(url) = &self.inner.url else {
            return false;
        };
        {
            let mut last = self
                .inner
                .last_fetch
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if last.is_some_and(|at| at.elapsed() < self.inner.min_refresh) {
                return false;
            }
            *last = Some(Instant::now());
        }
        match fetch(url).await {
            Ok(set) => {
                self.install(&set);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "refreshing the JWKS failed; the keys held are kept");
                false
            }
        }
    }

    fn install(&self, set: &JwkSet) {
        let (named, unnamed) = keys_of(set, &self.inner.algorithms);
        *self
            .inner
            .keys
            .write()
            .unwrap_or_else(PoisonError::into_inner) = named;
        *self
            .inner
            .unnamed
            .write()
            .unwrap_or_else(PoisonError::into_inner) = unnamed;
    }
}

impl JwtAuthenticatorBuilder {
    /// The signature algorithms accepted (default RS256 and ES256). Only asymmetric ones may
    /// be given: an HMAC algorithm would let anyone holding the public key sign tokens.
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// Clock skew allowed on `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The scopes the metadata document lists (`scopes_supported`).
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Let requests without any `Authorization` header in, as `caller` (marked anonymous). A
    /// token that fails validation is still refused.
    pub fn allow_anonymous(mut self, caller: Caller) -> Self {
        self.anonymous = Some(caller.into_anonymous());
        self
    }

    /// The shortest time between two fetches of the JWKS URL (default 10 s).
    pub fn min_refresh(mut self, interval: Duration) -> Self {
        self.min_refresh = interval;
        self
    }

    /// Use the keys of `set`.
    pub fn jwks(self, set: JwkSet) -> Result<JwtAuthenticator, JwtError> {
        let auth = self.finish(None)?;
        auth.install(&set);
        Ok(auth)
    }

    /// Use the keys of the JWKS file at `path`.
    pub fn jwks_file(self, path: impl AsRef<Path>) -> Result<JwtAuthenticator, JwtError> {
        let path = path.as_ref();
        let problem = |problem: String| JwtError::Jwks {
            source_name: path.display().to_string(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|e| problem(e.to_string()))?;
        let set: JwkSet = serde_json::from_str(&text).map_err(|e| problem(e.to_string()))?;
        self.jwks(set)
    }

    /// Fetch the keys from `url` now, and again when a token names a key id not among them.
    pub async fn jwks_url(self, url: impl Into<String>) -> Result<JwtAuthenticator, JwtError> {
        let url = url.into();
        check_url(&url)?;
        let set = fetch(&url).await?;
        let auth = self.finish(Some(url))?;
        auth.install(&set);
        *auth
            .inner
            .last_fetch
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        Ok(auth)
    }

    fn finish(self, url: Option<String>) -> Result<JwtAuthenticator, JwtError> {
        if self.algorithms.is_empty() {
            return Err(JwtError::Config(
                "no signature algorithm is accepted".into(),
            ));
        }
        if let Some(alg) = self
            .algorithms
            .iter()
            .find(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
        {
            return Err(JwtError::Config(format!(
                "{alg:?} is symmetric: a resource server verifies asymmetric signatures only"
            )));
        }
        if self.issuer.is_empty() || self.audience.is_empty() {
            return Err(JwtError::Config(
                "the issuer and the audience (this resource's URL) are required".into(),
            ));
        }
        Ok(JwtAuthenticator {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audience: self.audience,
                algorithms: self.algorithms,
                leeway: self.leeway,
                scopes_supported: self.scopes_supported,
                anonymous: self.anonymous,
                keys: RwLock::default(),
                unnamed: RwLock::default(),
                url,
                last_fetch: Mutex::new(None),
                min_refresh: self.min_refresh,
            }),
        })
    }
}

/// Why a token was refused (the message is the 401's, never the token's content).
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    Malformed,
    Algorithm,
    UnknownKey(String),
    Signature,
    Expired,
    NotYetValid,
    Issuer,
    Audience,
    Claims(&'static str),
}

impl From<&jsonwebtoken::errors::ErrorKind> for Refusal {
    fn from(kind: &jsonwebtoken::errors::ErrorKind) -> Self {
        use jsonwebtoken::errors::ErrorKind;
        match kind {
            ErrorKind::ExpiredSignature => Self::Expired,
            ErrorKind::ImmatureSignature => Self::NotYetValid,
            ErrorKind::InvalidIssuer => Self::Issuer,
            ErrorKind::InvalidAudience => Self::Audience,
            ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => Self::Algorithm,
            ErrorKind::MissingRequiredClaim(_) => Self::Claims("a required claim is missing"),
            ErrorKind::InvalidSignature => Self::Signature,
            _ => Self::Malformed,
        }
    }
}

impl Refusal {
    fn message(&self) -> String {
        match self {
            Self::Malformed => "the token is not a well-formed JWT".into(),
            Self::Algorithm => "the token's signature algorithm is not accepted".into(),
            Self::UnknownKey(kid) => {
                let kid: String = kid.chars().take(64).collect();
                format!("the token's key id '{kid}' is not among the issuer's keys")
            }
            Self::Signature => "the token's signature does not verify".into(),
            Self::Expired => "the token has expired".into(),
            Self::NotYetValid => "the token is not valid yet".into(),
            Self::Issuer => "the token was issued by another authorization server".into(),
            Self::Audience => "the token is for another resource".into(),
            Self::Claims(why) => format!("the token's claims are unusable: {why}"),
        }
    }
}

fn caller_of(claims: &Value) -> Result<Caller, Refusal> {
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(Refusal::Claims("`sub` is not a string"))?;
    let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        (_, Some(Value::String(scope))) => scope.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    Ok(Caller::new(sub, scopes))
}

/// The keys of `set` usable with `algorithms`, by key id, and those without one.
#[allow(clippy::type_complexity, reason = "two plain collections")]
fn keys_of(
    set: &JwkSet,
    algorithms: &[Algorithm],
) -> (
    HashMap<String, (DecodingKey, Algorithm)>,
    Vec<(DecodingKey, Algorithm)>,
) {
    let mut named = HashMap::new();
    let mut unnamed = Vec::new();
    for jwk in &set.keys {
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            tracing::warn!(kid = ?jwk.common.key_id, "a JWKS key could not be read; skipped");
            continue;
        };
        // The key's own algorithm, or the accepted one of its family.
        // Encryption keys never verify signatures.
        if matches!(
            jwk.common.public_key_use,
            Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
        ) {
            continue;
        }
        let declared = match jwk.common.key_algorithm {
            None => None,
            Some(a) => match a.to_string().parse::<Algorithm>() {
                Ok(alg) => Some(alg),
                // An algorithm this server does not sign with (`RSA-OAEP`...): not a key for it.
                Err(_) => continue,
            },
        };
        let family = |alg: &Algorithm| {
            matches!(
                (&jwk.algorithm, alg),
                (
                    AlgorithmParameters::RSA(_),
                    Algorithm::RS256
                        | Algorithm::RS384
                        | Algorithm::RS512
                        | Algorithm::PS256
                        | Algorithm::PS384
                        | Algorithm::PS512,
                ) | (
                    AlgorithmParameters::EllipticCurve(_),
                    Algorithm::ES256 | Algorithm::ES384
                ) | (AlgorithmParameters::OctetKeyPair(_), Algorithm::EdDSA)
            )
        };
        let alg = match declared {
            Some(alg) if algorithms.contains(&alg) && family(&alg) => Some(alg),
            Some(_) => None,
            None => algorithms.iter().copied().find(family),
        };
        let Some(alg) = alg else {
            continue;
        };
        match &jwk.common.key_id {
            Some(kid) => {
                named.insert(kid.clone(), (key, alg));
            }
            None => unnamed.push((key, alg)),
        }
    }
    (named, unnamed)
}

fn check_url(url: &str) -> Result<(), JwtError> {
    let problem = |problem: &str| JwtError::Jwks {
        source_name: url.to_owned(),
        problem: problem.to_owned(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| problem(&format!("not a URL: {e}")))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(problem("the URL carries credentials"));
    }
    match parsed.scheme() {
        "http" => {
            let loopback = match parsed.host() {
                Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            };
            if loopback {
                Ok(())
            } else {
                Err(problem(
                    "plain http is accepted for loopback hosts only: keys fetched over http can be forged on the way",
                ))
            }
        }
        "https" if cfg!(feature = "jwt-tls") => Ok(()),
        "https" => Err(problem("https:// needs the `jwt-tls` feature")),
        _ => Err(problem("the URL is neither https:// nor http://")),
    }
}

async fn fetch(url: &str) -> Result<JwkSet, JwtError> {
    let problem = |problem: String| JwtError::Jwks {
        source_name: url.to_owned(),
        problem,
    };
    // No redirects: one could lead from https (or loopback) to anywhere.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| problem(e.to_string()))?;
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| problem(e.to_string()))?;
    if !response.status().is_success() {
        return Err(problem(format!("answered {}", response.status())));
    }
    const MAX: usize = 1024 * 1024;
    let too_big = || problem("the key set is over 1 MiB".into());
    if response.content_length().is_some_and(|n| n > MAX as u64) {
        return Err(too_big());
    }
    let mut response = response;
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| problem(e.to_string()))? {
        if bytes.len() + chunk.len() > MAX {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|e| problem(e.to_string()))
}

/// The RFC 9728 metadata URL of the resource `audience`.
pub(crate) fn metadata_url(audience: &str) -> String {
    let (scheme, rest) = audience.split_once("://").unwrap_or(("https", audience));
    let (origin, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    let path = path.trim_end_matches('/');
    format!("{scheme}://{origin}/.well-known/oauth-protected-resource{path}")
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = match bearer(request)? {
                Some(token) => token,
                None => {
                    return self.inner.anonymous.clone().ok_or(AuthError::MissingToken);
                }
            };
            let refused = |refusal: Refusal| AuthError::Rejected(refusal.message());
            match self.verify(token) {
                Ok(caller) => Ok(caller),
                Err(Refusal::UnknownKey(kid)) => {
                    if self.refresh().await {
                        self.verify(token).map_err(refused)
                    } else {
                        Err(refused(Refusal::UnknownKey(kid)))
                    }
                }
                Err(refusal) => Err(refused(refusal)),
            }
        })
    }

    fn resource_metadata(&self) -> Option<Value> {
        Some(self.metadata())
    }

    fn resource_metadata_url(&self) -> Option<String> {
        Some(self.metadata_url())
    }
}

#[cfg(test)]
mod tests {
    use super::{check_url, metadata_url};

    #[test]
    fn plain_http_only_to_loopback() {
        assert!(check_url("http://127.0.0.1:8080/jwks.json").is_ok());
        assert!(check_url("http://localhost/jwks.json").is_ok());
        assert!(check_url("http://[::1]/jwks.json").is_ok());
        assert!(check_url("http://localhost:1@evil.example/jwks.json").is_err());
        assert!(check_url("http://evil.example/jwks.json").is_err());
        assert!(check_url("http://127.0.0.1.evil.example/jwks.json").is_err());
        assert!(check_url("ftp://127.0.0.1/jwks.json").is_err());
    }

    #[test]
    fn the_metadata_url_keeps_the_resource_path() {
        assert_eq!(
            metadata_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }
}
