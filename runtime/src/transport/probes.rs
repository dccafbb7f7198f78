//! The liveness and readiness probes on the app ([`HttpConfig::probes`](crate::HttpConfig::probes)),
//! outside authentication: liveness `200` while the process serves, readiness `200` while
//! the server is [ready](crate::Server::ready), else `503` with why.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::Server;

impl Server {
    /// `router` with the probes, at their paths unless the MCP endpoint takes one (`taken`).
    pub(super) fn with_probes<'a>(
        &self,
        mut router: Router,
        taken: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Router {
        let free = |path: &&String| !taken.clone().into_iter().any(|t| t == path.as_str());
        let http = &self.inner.http;
        if let Some(path) = http.live_path.as_ref().filter(free) {
            router = router.route(
                path,
                get(|| async { answer(StatusCode::OK, "alive", None) }),
            );
        }
        if let Some(path) = http.ready_path.as_ref().filter(free) {
            let server = self.clone();
            router = router.route(
                path,
                get(move || {
                    let server = server.clone();
                    async move {
                        match server.ready().await {
                            Ok(()) => answer(StatusCode::OK, "ready", None),
                            Err(why) => answer(
                                StatusCode::SERVICE_UNAVAILABLE,
                                "not ready",
                                Some(why.to_string()),
                            ),
                        }
                    }
                }),
            );
        }
        router
    }
}

/// A probe's answer: `{"status": ..., "reason"?: ...}`, never cached.
fn answer(status: StatusCode, word: &str, reason: Option<String>) -> Response {
    let body = match reason {
        Some(reason) => json!({"status": word, "reason": reason}),
        None => json!({"status": word}),
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}
