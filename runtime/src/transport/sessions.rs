//! HTTP sessions (protocol 2025, stateful HTTP) kept within bounds: at most so many at once,
//! closed after an idle time, and ended (`DELETE`) only by the caller that opened them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;

use super::summary::Summary;
use super::{ErrorAnswer, MAX_ANSWERING};
use crate::Caller;
use crate::server::HttpConfig;

/// The header that names a session.
const SESSION_ID: &str = "mcp-session-id";

/// The sessions of one endpoint and who opened each.
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    /// The caller that opened each session (pruned of closed ones as sessions open).
    owners: Mutex<HashMap<String, Caller>>,
    /// The ids of the requests being answered, by session: a session's answers are matched
    /// to its requests by id, so a second request with the id of one still running would
    /// take or lose its answer.
    answering: Arc<Mutex<HashMap<String, HashSet<String>>>>,
    cap: usize,
}

/// Why a request's id could not be taken.
pub(crate) enum Taken {
    /// A request of the session with this id is being answered.
    Repeated,
    /// The session has [`MAX_ANSWERING`] requests being answered.
    Full,
}

/// A request of a session being answered: its id is free again once the answer is done.
pub(crate) struct Answering {
    answering: Arc<Mutex<HashMap<String, HashSet<String>>>>,
    session: String,
    id: String,
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
        let mut answering = self
            .answering
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(ids) = answering.get_mut(&self.session) {
            ids.remove(&self.id);
            if ids.is_empty() {
                answering.remove(&self.session);
            }
        }
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
        Some(
            ErrorAnswer::new(
                id.clone(),
                -32000,
                format!(
                    "Too many sessions: this server holds {open}, its cap; retry later, or use \
                 protocol 2026-07-28, which needs no session"
                ),
            )
            .response(StatusCode::SERVICE_UNAVAILABLE),
        )
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
            return Err(ErrorAnswer::new(
                Value::Null,
                -32600,
                "Session not found: it ended, expired or never existed",
            )
            .response(StatusCode::NOT_FOUND));
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
            Err(ErrorAnswer::new(
                Value::Null,
                -32001,
                "Forbidden: another caller opened this session; only it may end it",
            )
            .response(StatusCode::FORBIDDEN))
        }
    }

    /// Mark the request `id` (its JSON) of `session` as being answered, until the guard
    /// goes; refused when a request of that session with that id is being answered already,
    /// or [`MAX_ANSWERING`] of them are.
    pub(crate) fn answering(&self, session: &str, id: String) -> Result<Answering, Taken> {
        let mut answering = self
            .answering
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ids = answering.entry(session.to_owned()).or_default();
        if ids.contains(&id) {
            return Err(Taken::Repeated);
        }
        if ids.len() >= MAX_ANSWERING {
            return Err(Taken::Full);
        }
        ids.insert(id.clone());
        Ok(Answering {
            answering: Arc::clone(&self.answering),
            session: session.to_owned(),
            id,
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

#[cfg(test)]
mod tests {
    use super::{MAX_ANSWERING, Sessions, Taken};
    use crate::server::HttpConfig;

    #[test]
    fn a_session_holds_at_most_so_many_ids() {
        let sessions = Sessions::new(&HttpConfig::default());
        let held: Vec<_> = (0..MAX_ANSWERING)
            .map(|i| sessions.answering("s", i.to_string()).ok().expect("free"))
            .collect();
        assert!(matches!(
            sessions.answering("s", "0".to_owned()),
            Err(Taken::Repeated)
        ));
        assert!(matches!(
            sessions.answering("s", "new".to_owned()),
            Err(Taken::Full)
        ));
        // Another session has its own.
        assert!(sessions.answering("t", "0".to_owned()).is_ok());
        drop(held);
        assert!(sessions.answering("s", "new".to_owned()).is_ok());
        assert!(sessions.answering.lock().expect("lock").is_empty());
    }
}
