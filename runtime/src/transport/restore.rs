//! rmcp's session store over the server's: a replica that meets a session another one
//! opened finds its `initialize` in the store, and rmcp replays the handshake to serve it.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::adapter::Kept;

/// The kept sessions, as rmcp restores them.
pub(super) struct Restore(pub(super) Arc<Kept>);

#[async_trait::async_trait]
impl SessionStore for Restore {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(initialize) = self.0.initialize(session_id).await? else {
            return Ok(None);
        };
        let params = serde_json::from_value(initialize)?;
        Ok(Some(SessionState::new(params)))
    }

    /// Nothing: the gate records a session, with the caller that opened it, once rmcp has
    /// answered its `initialize` (`Sessions::opened`).
    async fn store(&self, _: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    /// Nothing: the gate ends a session in the store before rmcp closes it here
    /// (`Sessions::end`).
    async fn delete(&self, _: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}
