//! The OAuth resource server: JWT access tokens checked against the issuer's JWKS. Tokens are
//! minted here with local keys (`tests/fixtures/jwt`); each refusal is checked on the wire
//! (status, `WWW-Authenticate`, JSON-RPC body), and so are the RFC 9728 metadata documents and
//! the JWKS refresh on an unknown key id.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{post, request};
use abilities::auth::jsonwebtoken::{self, Algorithm, EncodingKey, Header};
use abilities::http::axum;
use abilities::{Caller, Context, Registry, ability, auth::JwtAuthenticator, config::HttpConfig};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.com";
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/jwt");

mod notes {
    use super::*;

    /// Who reads the notes.
    #[ability(semantic = "READ", permission = "notes:read")]
    pub(crate) fn whoami(ctx: &Context) -> String {
        ctx.caller().principal().to_owned()
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).expect("a fixture")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A token signed with `key` (a fixture's PEM) as `kid`.
fn mint(alg: Algorithm, key: &str, kid: Option<&str>, claims: &Value) -> String {
    let pem = fixture(key);
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
        _ => EncodingKey::from_rsa_pem(&pem),
    }
    .expect("a private key");
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &key).expect("signs")
}

fn claims(audience: &str) -> Value {
    json!({"iss": ISSUER, "aud": audience, "sub": "ada", "scope": "notes:read other",
        "exp": now() + 600, "iat": now()})
}

/// A JWKS server on loopback whose key set can be swapped.
async fn jwks_server(initial: &str) -> (String, Arc<Mutex<Vec<u8>>>, Arc<Mutex<usize>>) {
    let served = Arc::new(Mutex::new(fixture(initial)));
    let fetches = Arc::new(Mutex::new(0));
    let (s, f) = (Arc::clone(&served), Arc::clone(&fetches));
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let body = s.lock().expect("lock").clone();
            *f.lock().expect("lock") += 1;
            async move { body }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/jwks.json"), served, fetches)
}

/// A server on a free port with the authenticator `build` makes for its resource URL; returns
/// its address and that URL.
async fn serve<F: std::future::Future<Output = JwtAuthenticator>>(
    build: impl FnOnce(String) -> F,
) -> (SocketAddr, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("addr");
    let resource = format!("http://{addr}/mcp");
    let server = builder!()
        .registry(Registry::collect_in(concat!(module_path!(), "::notes")).expect("valid"))
        .http(HttpConfig::default().stateless(true))
        .authenticator(build(resource.clone()).await)
        .build()
        .expect("builds");
    tokio::spawn(async move { server.serve_listener(listener).await });
    (addr, resource)
}

fn call_whoami() -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}})
    .to_string()
}

#[tokio::test]
async fn tokens_are_checked_and_every_refusal_says_why() {
    let (jwks, _, _) = jwks_server("jwks1.json").await;
    let (addr, resource) = serve(|resource| async move {
        JwtAuthenticator::new(ISSUER, resource)
            .scopes_supported(["notes:read"])
            .jwks_url(jwks)
            .await
            .expect("the JWKS is fetched")
    })
    .await;
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");

    // A good RS256 token and a good ES256 token: the caller is `sub`, with the token's scopes.
    for token in [
        mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &claims(&resource)),
        mint(Algorithm::ES256, "ec1.pem", Some("e1"), &claims(&resource)),
    ] {
        let bearer = format!("Bearer {token}");
        let answer = post(addr, "/mcp", &[("authorization", &bearer)], call_whoami()).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(
            answer.message()["result"]["structuredContent"],
            json!({"result": "ada"}),
            "{answer:?}"
        );
    }

    // A token without the tool's scope: 403, naming the scope to ask the user for.
    let mut narrow = claims(&resource);
    narrow["scope"] = json!("other");
    let token = mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &narrow);
    let bearer = format!("Bearer {token}");
    let answer = post(addr, "/mcp", &[("authorization", &bearer)], call_whoami()).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert_eq!(
        answer.header("www-authenticate"),
        Some(format!(
            r#"Bearer resource_metadata="{metadata_url}", error="insufficient_scope", scope="notes:read""#
        ))
    );
    assert_eq!(
        answer.message(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32001,
            "message": "Forbidden: tool 'whoami' needs the scope 'notes:read', which the token lacks"}})
    );
    // The same token may ping.
    assert_eq!(
        post(addr, "/mcp", &[("authorization", &bearer)], PING)
            .await
            .status,
        200
    );

    // No token: the challenge names the metadata, with no error (RFC 6750 §3.1).
    let none = post(addr, "/mcp", &[], PING).await;
    assert_eq!(none.status, 401);
    assert_eq!(
        none.header("www-authenticate"),
        Some(format!(r#"Bearer resource_metadata="{metadata_url}""#))
    );

    let at = |offset: i64| (now() as i64 + offset) as u64;
    let mut expired = claims(&resource);
    expired["exp"] = json!(at(-120));
    let mut early = claims(&resource);
    early["nbf"] = json!(at(600));
    let mut audience = claims(&resource);
    audience["aud"] = json!("https://other.example.com/mcp");
    let mut issuer = claims(&resource);
    issuer["iss"] = json!("https://evil.example.com");
    let mut nobody = claims(&resource);
    nobody.as_object_mut().map(|c| c.remove("sub"));
    let segment = |v: Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let alg_none = format!(
        "{}.{}.",
        segment(json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
        segment(claims(&resource))
    );
    // HS256 "signed" with the RSA public key as the secret: the classic key confusion.
    let public = fixture("jwks1.json");
    let confused = jsonwebtoken::encode(
        &Header {
            kid: Some("k1".into()),
            ..Header::new(Algorithm::HS256)
        },
        &claims(&resource),
        &EncodingKey::from_secret(&public),
    )
    .expect("signs");
    let cases = [
        (
            mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &expired),
            "the token has expired",
        ),
        (
            mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &early),
            "the token is not valid yet",
        ),
        (
            mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &audience),
            "the token is for another resource",
        ),
        (
            mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &issuer),
            "the token was issued by another authorization server",
        ),
        (
            mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &nobody),
            "the token's claims are unusable: a required claim is missing",
        ),
        (
            mint(Algorithm::RS256, "rsa2.pem", Some("k1"), &claims(&resource)),
            "the token's signature does not verify",
        ),
        (
            mint(Algorithm::RS256, "rsa2.pem", Some("k9"), &claims(&resource)),
            "the token's key id 'k9' is not among the issuer's keys",
        ),
        (alg_none, "the token is not a well-formed JWT"),
        (confused, "the token's signature algorithm is not accepted"),
        ("not.a.jwt".to_owned(), "the token is not a well-formed JWT"),
    ];
    for (token, why) in cases {
        let bearer = format!("Bearer {token}");
        let refused = post(addr, "/mcp", &[("authorization", &bearer)], PING).await;
        assert_eq!(refused.status, 401, "{why}: {refused:?}");
        assert_eq!(
            refused.header("www-authenticate"),
            Some(format!(
                r#"Bearer resource_metadata="{metadata_url}", error="invalid_token""#
            )),
            "{why}"
        );
        assert_eq!(
            refused.message()["error"],
            json!({"code": -32001, "message": format!("Unauthorized: invalid bearer token: {why}")}),
            "{why}"
        );
    }

    // The metadata, at the root and under the MCP path.
    let expected = json!({
        "resource": resource,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["notes:read"]
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let document = request(addr, "GET", path, &[], "").await;
        assert_eq!(document.status, 200, "{path}: {document:?}");
        let body: Value = serde_json::from_str(&document.body).expect("JSON");
        assert_eq!(body, expected, "{path}");
    }
}

#[tokio::test]
async fn an_unknown_key_id_fetches_the_jwks_again() {
    let (jwks, served, fetches) = jwks_server("jwks1.json").await;
    let (addr, resource) = serve(|resource| async move {
        JwtAuthenticator::new(ISSUER, resource)
            .min_refresh(Duration::ZERO)
            .jwks_url(jwks)
            .await
            .expect("fetched")
    })
    .await;
    assert_eq!(*fetches.lock().expect("lock"), 1, "fetched at start");
    let token = mint(Algorithm::RS256, "rsa2.pem", Some("k2"), &claims(&resource));
    let bearer = format!("Bearer {token}");
    // The issuer has not published k2 yet: refused, after one more fetch.
    let refused = post(addr, "/mcp", &[("authorization", &bearer)], PING).await;
    assert_eq!(refused.status, 401);
    assert_eq!(*fetches.lock().expect("lock"), 2);
    // The issuer rotates its keys: the next request fetches them and is let in.
    *served.lock().expect("lock") = fixture("jwks2.json");
    let answer = post(addr, "/mcp", &[("authorization", &bearer)], call_whoami()).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.message()["result"]["structuredContent"],
        json!({"result": "ada"})
    );
    assert_eq!(*fetches.lock().expect("lock"), 3);
    // A key it holds needs no fetch.
    let again = post(addr, "/mcp", &[("authorization", &bearer)], PING).await;
    assert_eq!(again.status, 200);
    assert_eq!(*fetches.lock().expect("lock"), 3);
}

#[tokio::test]
async fn a_jwks_file_serves_offline_and_bad_configurations_are_refused() {
    let (addr, resource) = serve(|resource| async move {
        JwtAuthenticator::new(ISSUER, resource)
            .allow_anonymous(Caller::anonymous())
            .jwks_file(format!("{FIXTURES}/jwks1.json"))
            .expect("reads the file")
    })
    .await;
    let token = mint(Algorithm::RS256, "rsa1.pem", Some("k1"), &claims(&resource));
    let bearer = format!("Bearer {token}");
    let answer = post(addr, "/mcp", &[("authorization", &bearer)], call_whoami()).await;
    assert_eq!(
        answer.message()["result"]["structuredContent"],
        json!({"result": "ada"})
    );
    // Anonymous allowed: no header passes, a bad token still does not, and a scoped tool
    // asks an anonymous caller to log in (401), not for a scope (403).
    assert_eq!(post(addr, "/mcp", &[], PING).await.status, 200);
    let anonymous = post(addr, "/mcp", &[], call_whoami()).await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let port = resource
        .strip_prefix("http://")
        .map(str::to_owned)
        .unwrap_or_default();
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some(format!(
            r#"Bearer resource_metadata="http://{}/.well-known/oauth-protected-resource/mcp""#,
            port.trim_end_matches("/mcp")
        ))
    );
    let bad = post(addr, "/mcp", &[("authorization", "Bearer x.y.z")], PING).await;
    assert_eq!(bad.status, 401);

    let symmetric = JwtAuthenticator::new(ISSUER, "https://mcp.example.com/mcp")
        .algorithms([Algorithm::RS256, Algorithm::HS256])
        .jwks_file(format!("{FIXTURES}/jwks1.json"));
    assert_eq!(
        symmetric.err().map(|e| e.to_string()),
        Some("JWT authenticator: HS256 is symmetric: a resource server verifies asymmetric signatures only".to_owned())
    );
    let remote_http = JwtAuthenticator::new(ISSUER, "https://mcp.example.com/mcp")
        .jwks_url("http://auth.example.com/jwks.json")
        .await;
    assert_eq!(
        remote_http.err().map(|e| e.to_string()),
        Some("JWKS http://auth.example.com/jwks.json: plain http is accepted for loopback hosts only: keys fetched over http can be forged on the way".to_owned())
    );
    let missing = JwtAuthenticator::new(ISSUER, "https://mcp.example.com/mcp")
        .jwks_file("/nonexistent/jwks.json");
    assert!(
        missing
            .err()
            .is_some_and(|e| e.to_string().starts_with("JWKS /nonexistent/jwks.json: ")),
    );
}
