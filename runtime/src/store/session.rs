//! Protocol 2025 sessions as a store keeps them, so that any replica sharing the store can
//! serve a session another one opened, the news replicas send each other about them, and the
//! streams a client resumes on any replica.

use serde_json::Value;

/// A session (protocol 2025, stateful HTTP) as a store keeps it: what a replica that meets
/// its id needs to serve it. The store keeps `state` as it is given; the server writes it
/// when the session opens and when the client changes it (its log level, its
/// subscriptions), never on a call.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRecord {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// What the session is: the client's `initialize` parameters, the caller that opened
    /// it, its log level and subscriptions (JSON the server reads back).
    pub state: Value,
    /// When it expires unless a replica serving it moves this on
    /// ([`Store::touch_sessions`](super::Store::touch_sessions)). Milliseconds since the
    /// Unix epoch.
    pub expires_at_ms: u64,
}

/// A session's news from another replica, as a store that replicas share carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// The session's record changed (its log level, its subscriptions): replicas serving
    /// it read it again.
    Changed(String),
    /// The session ended (`DELETE`): replicas serving it close it.
    Ended(String),
    /// A client's message for the session arrived at another replica
    /// ([`Store::forward_to_session`](super::Store::forward_to_session)): the replica whose
    /// call waits for it takes it.
    Forwarded(String),
    /// Events may have been lost (the store's connection to the other replicas broke and is
    /// back): every replica reads the records of the sessions it serves again.
    Missed,
    /// A message was added to a stream ([`Store::append_to_stream`](super::Store::append_to_stream)):
    /// the replicas whose clients follow it read it.
    Streamed(String),
}

/// One message of a stream a store keeps for a while, so a client that lost its stream can
/// resume it on any replica ([`Store::read_streams`](super::Store::read_streams)).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamEvent {
    /// Its position, increasing across every stream of the store: a client that saw it
    /// resumes after it.
    pub position: u64,
    /// The stream it was added to.
    pub stream: String,
    /// The message (a JSON-RPC notification or request for the client).
    pub message: Value,
}

/// What a read of streams found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamRead {
    /// The events after the position read from, oldest first.
    pub events: Vec<StreamEvent>,
    /// The store's last position, of any stream, when it was read: where a reader that wants
    /// only what comes next starts.
    pub last: u64,
}

/// Session events published by other replicas.
pub type SessionEvents = tokio::sync::broadcast::Receiver<SessionEvent>;
