//! rmcp's local session manager, with the requests a session's copy sends its client marked
//! as that copy's: when sessions are kept for other replicas, each replica serving a session
//! holds a copy of it, and every copy numbers its requests to the client from 0. On the wire
//! the id of a request from the copy marked `m` reads `"m-n"` (so no two copies send one id
//! in a session), and an answer names the copy it is for: the gate forwards it to the replica
//! holding that copy, and the copy reads its own number back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::{Stream, StreamExt as _};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, NumberOrString, ServerJsonRpcMessage,
    ServerNotification,
};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::store::EventStore;
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// The local session manager, its copies' requests marked when sessions are kept.
pub(super) struct Marked {
    inner: Arc<LocalSessionManager>,
    /// This process's part of every mark, when sessions are kept for other replicas.
    replica: Option<String>,
    /// The mark of each copy held here, by session.
    marks: Mutex<HashMap<SessionId, Arc<str>>>,
    next: AtomicU64,
    /// Whether the endpoint's tools may run as tasks: a 2025-11-25 session's `initialize`
    /// answer then tells of that version's tasks capability.
    tasks: std::sync::OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
}

impl Marked {
    /// `inner`, its copies marked when `replica` (this process's mark) is given.
    pub(super) fn new(inner: Arc<LocalSessionManager>, replica: Option<String>) -> Self {
        Self {
            inner,
            replica,
            marks: Mutex::default(),
            next: AtomicU64::new(0),
            tasks: std::sync::OnceLock::new(),
        }
    }

    /// Say how to know whether the endpoint's tools may run as tasks.
    pub(super) fn offer_tasks(&self, offers: Box<dyn Fn() -> bool + Send + Sync>) {
        let _ = self.tasks.set(offers);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<str>>> {
        self.marks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Give the new copy of session `id` a mark of its own.
    fn mark(&self, id: &SessionId) {
        if let Some(replica) = &self.replica {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            self.lock()
                .insert(id.clone(), format!("{replica}.{n}").into());
        }
    }

    /// The mark of the copy of session `id` held here.
    fn mark_of(&self, id: &SessionId) -> Option<Arc<str>> {
        self.replica.as_ref()?;
        self.lock().get(id).cloned()
    }

    /// Whether the copy of session `id` held here is marked `mark`.
    pub(super) fn holds(&self, id: &str, mark: &str) -> bool {
        let id = SessionId::from(id.to_owned());
        self.lock().get(&id).is_some_and(|m| &**m == mark)
    }

    /// The sessions held here (forgetting the marks of copies that closed by themselves).
    pub(super) async fn held(&self) -> Vec<String> {
        let held: std::collections::HashSet<SessionId> =
            self.inner.sessions.read().await.keys().cloned().collect();
        self.lock().retain(|id, _| held.contains(id));
        held.iter().map(|id| id.to_string()).collect()
    }

    /// The copies held here, as `<session>/<mark>`: where answers forwarded to them wait.
    pub(super) fn copies(&self) -> Vec<String> {
        self.lock()
            .iter()
            .map(|(id, mark)| format!("{id}/{mark}"))
            .collect()
    }

    /// `stream` of the copy of session `id`, its requests to the client marked.
    fn outward(
        &self,
        id: &SessionId,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let mark = self.mark_of(id);
        stream.map(move |sse| match &mark {
            Some(mark) => marked(sse, mark),
            None => sse,
        })
    }

    /// `message` for the copy of session `id`, its answer's id read back as the copy's own.
    fn inward(&self, id: &SessionId, message: ClientJsonRpcMessage) -> ClientJsonRpcMessage {
        match self.mark_of(id) {
            Some(mark) => unmarked(message, &mark),
            None => message,
        }
    }
}

/// The mark and number of an answer's id `"m-n"`, if it reads so.
pub(super) fn parse(id: &str) -> Option<(&str, i64)> {
    let (mark, n) = id.rsplit_once('-')?;
    Some((mark, n.parse().ok()?))
}

fn mark_id(id: &mut NumberOrString, mark: &str) {
    if let NumberOrString::Number(n) = id {
        *id = NumberOrString::String(format!("{mark}-{n}").into());
    }
}

fn unmark_id(id: &mut NumberOrString, mark: &str) {
    let NumberOrString::String(text) = id else {
        return;
    };
    if let Some((of, n)) = parse(text)
        && of == mark
    {
        *id = NumberOrString::Number(n);
    }
}

/// `sse` with the id of a request to the client (or of a cancellation of one) marked.
fn marked(mut sse: ServerSseMessage, mark: &str) -> ServerSseMessage {
    let Some(message) = &sse.message else {
        return sse;
    };
    let marks = match &**message {
        ServerJsonRpcMessage::Request(_) => true,
        ServerJsonRpcMessage::Notification(note) => matches!(
            &note.notification,
            ServerNotification::CancelledNotification(_)
        ),
        _ => false,
    };
    if !marks {
        return sse;
    }
    let Some(message) = sse.message.take() else {
        return sse;
    };
    let mut message = Arc::unwrap_or_clone(message);
    match &mut message {
        ServerJsonRpcMessage::Request(request) => mark_id(&mut request.id, mark),
        ServerJsonRpcMessage::Notification(note) => {
            if let ServerNotification::CancelledNotification(cancelled) = &mut note.notification
                && let Some(id) = &mut cancelled.params.request_id
            {
                mark_id(id, mark);
            }
        }
        _ => {}
    }
    sse.message = Some(Arc::new(message));
    sse
}

/// `message` with the id of an answer (or of a cancellation) to this copy's request read back.
fn unmarked(mut message: ClientJsonRpcMessage, mark: &str) -> ClientJsonRpcMessage {
    match &mut message {
        ClientJsonRpcMessage::Response(response) => unmark_id(&mut response.id, mark),
        ClientJsonRpcMessage::Error(error) => {
            if let Some(id) = &mut error.id {
                unmark_id(id, mark);
            }
        }
        ClientJsonRpcMessage::Notification(note) => {
            if let ClientNotification::CancelledNotification(cancelled) = &mut note.notification
                && let Some(id) = &mut cancelled.params.request_id
            {
                unmark_id(id, mark);
            }
        }
        ClientJsonRpcMessage::Request(_) => {}
    }
    message
}

impl SessionManager for Marked {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.mark(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let mut answer = self.inner.initialize_session(id, message).await?;
        if let ServerJsonRpcMessage::Response(response) = &mut answer
            && let rmcp::model::ServerResult::InitializeResult(init) = &response.result
            && self.tasks.get().is_some_and(|offers| offers())
            && let Some(announced) = crate::adapter::tasks_2025::announced(init)
        {
            response.result = announced;
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.outward(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let message = self.inward(id, message);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.outward(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.outward(id, stream))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.mark(&id);
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn an_answer_id_names_its_copy_and_number() {
        assert_eq!(parse("a1b2c3.4-17"), Some(("a1b2c3.4", 17)));
        assert_eq!(parse("a-b-3"), Some(("a-b", 3)));
        assert_eq!(parse("a1b2c3.4"), None);
        assert_eq!(parse("a1b2c3.4-x"), None);
    }
}
