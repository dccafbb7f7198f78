//! HTTP sessions (protocol 2025, stateful HTTP) kept within bounds: at most so many at once,
//! closed after an idle time, and ended (`DELETE`) only by the caller that opened them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use rmcp::transport::common::server_side_http::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;

use super::marked::{self, Marked};
use super::summary::Summary;
use super::{ErrorAnswer, MAX_ANSWERING};
use crate::Caller;
use crate::adapter::{Joining, Kept};
use crate::server::HttpConfig;

/// The header that names a session.
const SESSION_ID: &str = "mcp-session-id";

/// The sessions of one endpoint and who opened each.
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    /// The same, as rmcp's service runs on it: the ids of its copies' requests marked.
    marked: Arc<Marked>,
    /// The caller that opened each session (pruned of closed ones as sessions open).
    owners: Mutex<HashMap<String, Caller>>,
    /// The ids of the requests being answered, by session: a session's answers are matched
    /// to its requests by id, so a second request with the id of one still running would
    /// take or lose its answer.
    answering: Arc<Mutex<HashMap<String, HashSet<String>>>>,
    cap: usize,
    /// Where sessions are kept for the other replicas, with a store they share.
    kept: Option<Arc<Kept>>,
    /// The kept sessions whose copy here has its outside-a-request messages sent into the
    /// session's stream.
    pumped: Arc<Mutex<HashSet<String>>>,
}

/// What this replica or the store knows of who opened a session.
enum Found {
    /// Neither holds the session.
    Missing,
    /// Held here, with no owner on record (a session opened without a caller).
    Unowned,
    /// Opened by the caller with this principal, anonymous or not.
    Owned(String, bool),
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
    pub(crate) fn new(options: &HttpConfig, kept: Option<Arc<Kept>>) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(options.session_idle);
        let manager = Arc::new(manager);
        let replica = kept.as_ref().map(|kept| kept.replica().to_owned());
        let marked = Arc::new(Marked::new(Arc::clone(&manager), replica));
        if let Some(kept) = &kept {
            super::in_step::start(Arc::downgrade(&marked), Arc::clone(kept));
        }
        Self {
            manager,
            marked,
            owners: Mutex::new(HashMap::new()),
            answering: Arc::default(),
            cap: options.max_sessions,
            kept,
            pumped: Arc::default(),
        }
    }

    /// The sessions held here.
    pub(crate) fn manager(&self) -> Arc<LocalSessionManager> {
        Arc::clone(&self.manager)
    }

    /// The session manager rmcp's service runs on.
    pub(super) fn marked(&self) -> Arc<Marked> {
        Arc::clone(&self.marked)
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

    /// The refusal of a request that would restore here a session another replica opened
    /// (it names a session not held here): `503` with `Retry-After: 1` when this replica holds
    /// as many sessions as its cap (restored copies count as opened ones), or when the store
    /// cannot say whether it keeps the session (rmcp would answer `500`), so the client
    /// retries, through the balancer, on a replica with room or once the store is back.
    pub(crate) async fn refuse_restore(&self, headers: &HeaderMap) -> Option<Response> {
        let kept = self.kept.as_ref()?;
        let id = Self::named(headers)?;
        let open = {
            let sessions = self.manager.sessions.read().await;
            if sessions.contains_key(id) {
                return None;
            }
            sessions.len()
        };
        let refusal =
            |code: i32, message: String| ErrorAnswer::new(Value::Null, code, message).retry_soon();
        if open >= self.cap {
            tracing::warn!(
                open,
                cap = self.cap,
                "a session was not restored: the cap is reached"
            );
            return Some(refusal(
                -32000,
                format!(
                    "Too many sessions: this replica holds {open}, its cap; retry (another \
                     replica may serve the session)"
                ),
            ));
        }
        // Read once before rmcp restores it, which reads again (a restore is rare: once per
        // session and replica).
        let error = kept.initialize(id).await.err()?;
        tracing::warn!(%error, "a session was not restored: the store did not answer");
        Some(refusal(
            -32603,
            format!("The store did not say whether the session is open: {error}; retry"),
        ))
    }

    /// Remember that `caller` opened the session `response` names, if it names one; with a
    /// store replicas share, record it there from the `initialize` request in `body`. A
    /// session that cannot be recorded is closed, and the answer is `503`: the other
    /// replicas would not know it.
    pub(crate) async fn opened(
        &self,
        response: Response,
        caller: &Caller,
        summary: &Summary<'_>,
        body: &[u8],
        joining: Option<&Joining>,
    ) -> Response {
        let Some(id) = Self::named(response.headers()).map(str::to_owned) else {
            return response;
        };
        self.own(&id, caller);
        let (Some(kept), Some(joining)) = (&self.kept, joining) else {
            return response;
        };
        let initialize = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|mut request| request.get_mut("params").map(Value::take))
            .unwrap_or_default();
        let Err(error) = kept.open(&id, initialize, caller).await else {
            kept.opened(&id, joining);
            self.pump(&id);
            return response;
        };
        tracing::error!(%error, session = id, "a session could not be recorded in the store");
        let _ = self
            .manager
            .close_session(&SessionId::from(id.clone()))
            .await;
        self.forget(&id);
        ErrorAnswer::new(
            summary.answer_id(),
            -32603,
            format!("the session could not be recorded for the other replicas: {error}"),
        )
        .response(StatusCode::SERVICE_UNAVAILABLE)
    }

    /// Send what the copy held here of kept session `id` says to its client outside a
    /// request (a list change, a request no request's stream carries) into the session's
    /// stream, which the replica holding the client's `GET` stream sends: from now on, while
    /// the copy lives here (rmcp keeps what it said before, and hands it over first).
    pub(crate) fn pump(&self, id: &str) {
        let Some(kept) = &self.kept else {
            return;
        };
        {
            let mut pumped = self.pumped.lock().unwrap_or_else(PoisonError::into_inner);
            if pumped.contains(id) {
                return;
            }
            pumped.insert(id.to_owned());
        }
        // The copy's stream does not keep the endpoint alive.
        let (marked, kept, pumped) = (
            Arc::downgrade(&self.marked),
            Arc::clone(kept),
            Arc::clone(&self.pumped),
        );
        let id = id.to_owned();
        tokio::spawn(async move {
            let session = SessionId::from(id.clone());
            let opened = match marked.upgrade() {
                Some(marked) => marked.create_standalone_stream(&session).await,
                None => return,
            };
            match opened {
                Ok(stream) => {
                    let mut stream = std::pin::pin!(stream);
                    while let Some(sse) = futures_util::StreamExt::next(&mut stream).await {
                        let Some(message) = sse.message else { continue };
                        let sent = match serde_json::to_value(&*message) {
                            Ok(message) => kept
                                .append(&Kept::session_stream(&id), &message)
                                .await
                                .map(drop),
                            Err(error) => Err(crate::store::StoreError::backend(error)),
                        };
                        if let Err(error) = sent {
                            tracing::warn!(%error, session = id, "a message for a session's stream was lost");
                        }
                    }
                }
                Err(error) => tracing::debug!(%error, session = id, "no copy here to send from"),
            }
            pumped
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
        });
    }

    /// Whether the copy here of kept session `id` already sends into its stream.
    pub(crate) fn pumping(&self, id: &str) -> bool {
        self.pumped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id)
    }

    /// Where sessions are kept for other replicas, with a store they share.
    pub(crate) fn kept(&self) -> Option<&Arc<Kept>> {
        self.kept.as_ref()
    }

    /// Whether sessions are kept for other replicas (the store is shared).
    pub(crate) fn keeps(&self) -> bool {
        self.kept.is_some()
    }

    /// A client's answer (a message with an id and no method) to a request that a copy of
    /// its session on another replica sent (its id names that copy, see
    /// [`Marked`](super::marked)): handed to that replica through the store and accepted,
    /// `202`, when its caller may answer in the session. `None` when it is not such an answer
    /// (rmcp takes it here), or no replica holds the session (rmcp answers `404`).
    pub(crate) async fn forward(
        &self,
        headers: &HeaderMap,
        summary: &Summary<'_>,
        caller: &Caller,
        body: &[u8],
    ) -> Option<Response> {
        let kept = self.kept.as_ref()?;
        if summary.method.is_some() {
            return None;
        }
        let id = summary.id.as_ref()?.as_str()?;
        let (mark, _) = marked::parse(id)?;
        let session = Self::named(headers)?;
        if self.marked.holds(session, mark) {
            return None;
        }
        let unavailable = |why: String| {
            ErrorAnswer::new(Value::Null, -32603, why).response(StatusCode::SERVICE_UNAVAILABLE)
        };
        match kept.owner(session).await {
            Ok(Some(owner)) if owner.is(caller) => {}
            Ok(Some(_)) => {
                return Some(
                    ErrorAnswer::new(
                        Value::Null,
                        -32001,
                        "Forbidden: another caller opened this session; only it may answer in it",
                    )
                    .response(StatusCode::FORBIDDEN),
                );
            }
            Ok(None) => return None,
            Err(error) => {
                return Some(unavailable(format!(
                    "the store did not say whether the session is open: {error}"
                )));
            }
        }
        // Only an answer is carried: a response or an error, as rmcp reads them.
        let message = serde_json::from_slice::<Value>(body).ok()?;
        if !matches!(
            serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(message.clone()),
            Ok(rmcp::model::ClientJsonRpcMessage::Response(_)
                | rmcp::model::ClientJsonRpcMessage::Error(_))
        ) {
            return None;
        }
        let to = format!("{session}/{mark}");
        Some(match kept.forward(&to, &message).await {
            Ok(()) => {
                let mut accepted = Response::new(axum::body::Body::empty());
                *accepted.status_mut() = StatusCode::ACCEPTED;
                accepted
            }
            Err(error) => unavailable(format!(
                "the answer could not reach the replica waiting for it: {error}"
            )),
        })
    }

    /// Remember that `caller` opened the session `id`.
    fn own(&self, id: &str, caller: &Caller) {
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget sessions that ended (read under the owners' lock, so no session opened
        // meanwhile is forgotten); when the sessions are busy, next time.
        if let Ok(sessions) = self.manager.sessions.try_read() {
            let live: std::collections::HashSet<&str> = sessions.keys().map(|s| &**s).collect();
            owners.retain(|k, _| k == id || live.contains(k.as_str()));
        }
        owners.insert(id.to_owned(), caller.clone());
    }

    /// Who opened the session `id`, as this replica or the store knows; `Err` with the
    /// refusal when the store cannot say.
    async fn owner(&self, id: &str) -> Result<Found, Response> {
        let exists = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .any(|k| &**k == id);
        let known = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(|caller| Found::Owned(caller.principal().to_owned(), caller.is_anonymous()));
        match (exists, known, &self.kept) {
            (true, Some(known), _) => Ok(known),
            (true, None, None) => Ok(Found::Unowned),
            (false, _, None) => Ok(Found::Missing),
            (_, _, Some(kept)) => match kept.owner(id).await {
                Ok(Some(owner)) => Ok(Found::Owned(owner.principal, owner.anonymous)),
                Ok(None) if exists => Ok(Found::Unowned),
                Ok(None) => Ok(Found::Missing),
                Err(error) => Err(ErrorAnswer::new(
                    Value::Null,
                    -32603,
                    format!("the store did not say who opened the session: {error}"),
                )
                .response(StatusCode::SERVICE_UNAVAILABLE)),
            },
        }
    }

    /// Whether `caller` may end session `id`: `404` when there is no such session (a second
    /// `DELETE` included), `403` when another caller opened it. Anonymous callers are told
    /// apart by nothing but the session id they hold.
    pub(crate) async fn may_delete(
        &self,
        id: &str,
        caller: Option<&Caller>,
    ) -> Result<(), Response> {
        let same = match (self.owner(id).await?, caller) {
            (Found::Missing, _) => {
                self.forget(id);
                return Err(ErrorAnswer::new(
                    Value::Null,
                    -32600,
                    "Session not found: it ended, expired or never existed",
                )
                .response(StatusCode::NOT_FOUND));
            }
            (Found::Owned(principal, anonymous), Some(caller)) => {
                principal == caller.principal() && anonymous == caller.is_anonymous()
            }
            // No owner on record: nobody may end it but its idle timeout.
            (Found::Unowned, _) | (Found::Owned(..), None) => false,
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

    /// End the session `id` for the other replicas too (its record goes from the store);
    /// the refusal when the store failed.
    pub(crate) async fn end(&self, id: &str) -> Result<(), Response> {
        let Some(kept) = &self.kept else {
            return Ok(());
        };
        kept.end(id).await.map(drop).map_err(|error| {
            ErrorAnswer::new(
                Value::Null,
                -32603,
                format!("the session could not be ended for the other replicas: {error}"),
            )
            .response(StatusCode::SERVICE_UNAVAILABLE)
        })
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
        let sessions = Sessions::new(&HttpConfig::default(), None);
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
