//! HTTP sessions (protocol 2025, stateful HTTP) kept within bounds: at most so many at once,
//! closed after an idle time, and ended (`DELETE`) only by the caller that opened them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::rpc_error;
use super::summary::Summary;
use crate::Caller;
use crate::server::HttpConfig;

/// The header that names a session.
const SESSION_ID: &str = "mcp-session-id";

/// The sessions of one endpoint and who opened each.
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    /// The caller that opened each session (pruned of closed ones as sessions open).
    owners: Mutex<HashMap<String, Caller>>,
    /// The requests being answered, by session and id: a session's answers are matched to
    /// its requests by id, so a second request with the id of one still running would take
    /// or lose its answer.
    answering: Arc<Mutex<HashSet<(String, String)>>>,
    cap: usize,
}

/// A request of a session being answered: its id is free again once the answer is done.
pub(crate) struct Answering {
    answering: Arc<Mutex<HashSet<(String, String)>>>,
    key: (String, String),
}

impl Answering {
    /// `body`, holding this request's id until the answer has gone out: when the stream
    /// ends, at once; when it is dropped before its end (the client went away while the
    /// handler runs on and will still answer under this id), once `linger` (the handler's
    /// time limit) has passed.
    pub(crate) fn hold(
        self,
        body: axum::body::Body,
        linger: std::time::Duration,
    ) -> axum::body::Body {
        axum::body::Body::from_stream(Held {
            inner: body.into_data_stream(),
            answering: Some(self),
            linger,
        })
    }
}

/// An answer stream and the id it holds.
struct Held {
    inner: axum::body::BodyDataStream,
    answering: Option<Answering>,
    linger: std::time::Duration,
}

impl futures_util::Stream for Held {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = std::pin::Pin::new(&mut self.inner).poll_next(cx);
        if let std::task::Poll::Ready(None) = next {
            // Answered: the id is free.
            self.answering = None;
        }
        next
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (Some(answering), Ok(runtime)) =
            (self.answering.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let linger = self.linger;
        runtime.spawn(async move {
            tokio::time::sleep(linger).await;
            drop(answering);
        });
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.answering
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl Sessions {
    pub(crate) fn new(options: &HttpConfig) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(options.session_idle);
        Self {
            manager: Arc::new(manager),
            owners: Mutex::new(HashMap::new()),
            answering: Arc::default(),
            cap: options.max_sessions,
        }
    }

    /// The session manager rmcp's service runs on.
    pub(crate) fn manager(&self) -> Arc<LocalSessionManager> {
        Arc::clone(&self.manager)
    }

    /// The session a request names.
    pub(crate) fn named(headers: &HeaderMap) -> Option<&str> {
        headers.get(SESSION_ID).and_then(|v| v.to_str().ok())
    }

    /// The refusal of a request that would open a session past the cap, if `summary` is one
    /// (an `initialize` request) and the cap is reached.
    pub(crate) async fn refuse_new(&self, summary: &Summary<'_>) -> Option<Response> {
        if summary.method.as_deref() != Some("initialize") {
            return None;
        }
        let open = self.manager.sessions.read().await.len();
        if open < self.cap {
            return None;
        }
        let id = summary.answer_id();
        tracing::warn!(
            open,
            cap = self.cap,
            "a session was refused: the cap is reached"
        );
        Some(rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &id,
            -32000,
            format!(
                "Too many sessions: this server holds {open}, its cap; retry later, or use \
                 protocol 2026-07-28, which needs no session"
            ),
        ))
    }

    /// Remember that `caller` opened the session `response` names, if it names one.
    pub(crate) fn opened(&self, response: &Response, caller: Option<&Caller>) {
        let (Some(id), Some(caller)) = (Self::named(response.headers()), caller) else {
            return;
        };
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget sessions that ended (read under the owners' lock, so no session opened
        // meanwhile is forgotten); when the sessions are busy, next time.
        if let Ok(sessions) = self.manager.sessions.try_read() {
            let live: std::collections::HashSet<&str> = sessions.keys().map(|s| &**s).collect();
            owners.retain(|k, _| k == id || live.contains(k.as_str()));
        }
        owners.insert(id.to_owned(), caller.clone());
    }

    /// Whether `caller` may end session `id`: `404` when there is no such session (a second
    /// `DELETE` included), `403` when another caller opened it. Anonymous callers are told
    /// apart by nothing but the session id they hold.
    pub(crate) async fn may_delete(
        &self,
        id: &str,
        caller: Option<&Caller>,
    ) -> Result<(), Response> {
        let exists = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .any(|k| &**k == id);
        if !exists {
            self.forget(id);
            return Err(rpc_error(
                StatusCode::NOT_FOUND,
                &serde_json::Value::Null,
                -32600,
                "Session not found: it ended, expired or never existed".to_owned(),
            ));
        }
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        let owner = owners.get(id);
        let same = match (owner, caller) {
            (Some(owner), Some(caller)) => {
                owner.principal() == caller.principal()
                    && owner.is_anonymous() == caller.is_anonymous()
            }
            // No owner on record: nobody may end it but its idle timeout.
            (None, _) | (Some(_), None) => false,
        };
        if same {
            Ok(())
        } else {
            Err(rpc_error(
                StatusCode::FORBIDDEN,
                &serde_json::Value::Null,
                -32001,
                "Forbidden: another caller opened this session; only it may end it".to_owned(),
            ))
        }
    }

    /// Mark the request `id` (its JSON) of `session` as being answered, until the guard
    /// goes; `None` when a request of that session with that id is being answered already.
    pub(crate) fn answering(&self, session: &str, id: String) -> Option<Answering> {
        let key = (session.to_owned(), id);
        let fresh = self
            .answering
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone());
        fresh.then(|| Answering {
            answering: Arc::clone(&self.answering),
            key,
        })
    }

    /// Forget who opened session `id` (it ended).
    pub(crate) fn forget(&self, id: &str) {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}
