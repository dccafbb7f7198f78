//! Sessions kept in a store that replicas share (protocol 2025, stateful HTTP): what a
//! session is (the client's `initialize`, the caller that opened it, its log level and
//! subscriptions) is written when it opens and when its client changes it, never on a call;
//! a replica that meets the session reads it, and reads it again when another replica
//! changes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::LoggingLevel;
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::level::from_rmcp_level;
use crate::Caller;
use crate::resource::{ResourceNotifier, Subscriber};
use crate::store::{SessionEvents, SessionRecord, Store, StoreError};

/// How long an answer forwarded to another replica is kept for it (it is taken at once; one
/// nobody takes is swept).
const FORWARDED_FOR_MS: u64 = 60_000;

/// How many times a change to a session is tried while other replicas change it at once.
const CHANGE_ATTEMPTS: usize = 8;

/// The sessions of one endpoint as its store keeps them, and those this replica serves.
pub(crate) struct Kept {
    store: Arc<dyn Store>,
    notifier: ResourceNotifier,
    /// How long a session lives without a request.
    idle: Duration,
    /// The sessions this replica serves, by id.
    live: Mutex<HashMap<String, Live>>,
    /// This process's mark, random: the part every copy of a session made here has in its
    /// requests' ids.
    replica: String,
    /// How many `GET` streams of each session are open here.
    streams: Mutex<HashMap<String, usize>>,
}

/// A session's `GET` stream open here, until this goes.
pub(crate) struct Streaming {
    kept: Arc<Kept>,
    session: String,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let mut streams = self.kept.streams_lock();
        if let Some(n) = streams.get_mut(&self.session) {
            *n -= 1;
            if *n == 0 {
                streams.remove(&self.session);
            }
        }
    }
}

/// A session this replica serves: where its log level and subscriptions take effect.
struct Live {
    level: Arc<AtomicU8>,
    /// The key of its resource subscriptions.
    key: u64,
    peer: Peer<RoleServer>,
    /// The resources it is subscribed to here.
    uris: Vec<String>,
}

impl Live {
    fn new(level: Arc<AtomicU8>, key: u64, peer: Peer<RoleServer>) -> Self {
        Self {
            level,
            key,
            peer,
            uris: Vec::new(),
        }
    }
}

/// Where a session's `initialize` leaves what the session is served with here, for the
/// gate to register under the id rmcp then gives it ([`Kept::opened`]). It travels in the
/// `initialize` request's extensions.
#[derive(Clone, Default)]
pub(crate) struct Joining(Arc<Mutex<Option<Live>>>);

impl Joining {
    /// Leave the session's log level, subscription key and peer.
    pub(super) fn join(&self, level: Arc<AtomicU8>, key: u64, peer: Peer<RoleServer>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Live::new(level, key, peer));
    }
}

/// What a session is, as its record's state holds it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct State {
    /// The client's `initialize` parameters, as it sent them.
    initialize: Value,
    /// The principal of the caller that opened it.
    owner: String,
    /// Whether that caller was anonymous.
    anonymous: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_level: Option<LoggingLevel>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subscriptions: Vec<String>,
}

/// Who opened a kept session.
pub(crate) struct Owner {
    pub(crate) principal: String,
    pub(crate) anonymous: bool,
}

impl Owner {
    /// Whether `caller` is the one that opened the session.
    pub(crate) fn is(&self, caller: &Caller) -> bool {
        self.principal == caller.principal() && self.anonymous == caller.is_anonymous()
    }
}

impl Kept {
    /// The kept sessions of an endpoint on `store`, if replicas share it (a store of one
    /// process has no one to serve a session but the replica that opened it).
    pub(crate) fn on(
        store: &Arc<dyn Store>,
        notifier: &ResourceNotifier,
        idle: Duration,
    ) -> Option<Arc<Self>> {
        store.is_shared().then(|| {
            let mut replica = [0u8; 4];
            if let Err(error) = getrandom::fill(&mut replica) {
                tracing::warn!(%error, "no randomness for this replica's mark: the clock's");
                replica = (crate::clock::now_ms() as u32).to_le_bytes();
            }
            Arc::new(Self {
                store: Arc::clone(store),
                notifier: notifier.clone(),
                idle,
                live: Mutex::default(),
                replica: replica.iter().map(|b| format!("{b:02x}")).collect(),
                streams: Mutex::default(),
            })
        })
    }

    /// This process's mark: the part every copy of a session made here has in the ids of its
    /// requests to the client.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// How long a session lives without a request.
    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    fn expiry(&self) -> u64 {
        let idle = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        crate::clock::now_ms().saturating_add(idle)
    }

    /// Record the session `id` that `caller` opened with `initialize`.
    pub(crate) async fn open(
        &self,
        id: &str,
        initialize: Value,
        caller: &Caller,
    ) -> Result<(), StoreError> {
        let state = State {
            initialize,
            owner: caller.principal().to_owned(),
            anonymous: caller.is_anonymous(),
            log_level: None,
            subscriptions: Vec::new(),
        };
        self.put(id, &state).await
    }

    async fn put(&self, id: &str, state: &State) -> Result<(), StoreError> {
        let state = serde_json::to_value(state).map_err(StoreError::backend)?;
        let record = SessionRecord {
            id: id.to_owned(),
            state,
            expires_at_ms: self.expiry(),
        };
        self.store.put_session(&record).await
    }

    async fn read(&self, id: &str) -> Result<Option<State>, StoreError> {
        Ok(self.read_as_kept(id).await?.map(|(state, _)| state))
    }

    /// The session `id`'s state, and its record's state as the store holds it.
    async fn read_as_kept(&self, id: &str) -> Result<Option<(State, Value)>, StoreError> {
        let Some(record) = self.store.session(id, crate::clock::now_ms()).await? else {
            return Ok(None);
        };
        let state = serde_json::from_value(record.state.clone())
            .map_err(|e| StoreError::failed(format!("session {id}'s record is unreadable: {e}")))?;
        Ok(Some((state, record.state)))
    }

    /// The `initialize` parameters of the session `id`, if the store keeps it.
    pub(crate) async fn initialize(&self, id: &str) -> Result<Option<Value>, StoreError> {
        Ok(self.read(id).await?.map(|state| state.initialize))
    }

    /// Who opened the session `id`, if the store keeps it.
    pub(crate) async fn owner(&self, id: &str) -> Result<Option<Owner>, StoreError> {
        Ok(self.read(id).await?.map(|state| Owner {
            principal: state.owner,
            anonymous: state.anonymous,
        }))
    }

    /// End the session `id` on every replica; whether the store kept it.
    pub(crate) async fn end(&self, id: &str) -> Result<bool, StoreError> {
        let kept = self.store.delete_session(id).await?;
        self.forget(id);
        Ok(kept)
    }

    /// Move the expiry of the sessions `ids` (those this replica serves) on; those among
    /// them the store no longer keeps.
    pub(crate) async fn touch(&self, ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.store.touch_sessions(ids, self.expiry()).await
    }

    /// The session `id`, restored here from the store, is served here from now on: its log
    /// level in `level`, its subscriptions under `key` through `peer`, as its record says;
    /// whether the store still keeps it (it may have ended since it was read).
    pub(super) async fn restored(
        &self,
        id: &str,
        level: Arc<AtomicU8>,
        key: u64,
        peer: Peer<RoleServer>,
    ) -> bool {
        self.lock()
            .insert(id.to_owned(), Live::new(level, key, peer));
        self.reread(id).await
    }

    /// The session `id`, opened here, is served here from now on, as `joining` holds it.
    pub(crate) fn opened(&self, id: &str, joining: &Joining) {
        let live = joining
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(live) = live {
            self.lock().insert(id.to_owned(), live);
        }
    }

    /// Read the session `id`'s record again (another replica changed it) and apply it here;
    /// whether the store still keeps it (a session it no longer keeps is forgotten; one
    /// whose record cannot be read now is left as it is).
    pub(crate) async fn reread(&self, id: &str) -> bool {
        if !self.lock().contains_key(id) {
            return true;
        }
        match self.read(id).await {
            Ok(Some(state)) => self.apply(id, &state),
            Ok(None) => {
                self.forget(id);
                return false;
            }
            Err(error) => {
                tracing::warn!(%error, session = id, "a session's record could not be read");
            }
        }
        true
    }

    /// Session events from the other replicas, if the store carries them.
    pub(crate) fn events(&self) -> Option<SessionEvents> {
        self.store.session_events()
    }

    /// Make this replica's copy of the session `id` what `state` says.
    fn apply(&self, id: &str, state: &State) {
        let mut live = self.lock();
        let Some(session) = live.get_mut(id) else {
            return;
        };
        if let Some(level) = state.log_level {
            session
                .level
                .store(from_rmcp_level(level) as u8, Ordering::Relaxed);
        }
        for uri in &session.uris {
            if !state.subscriptions.contains(uri) {
                self.notifier.unsubscribe(uri, session.key);
            }
        }
        for uri in &state.subscriptions {
            if !session.uris.contains(uri) {
                let subscriber = Subscriber::Session(session.key, session.peer.clone());
                self.notifier.subscribe(uri, subscriber);
            }
        }
        session.uris.clone_from(&state.subscriptions);
    }

    /// Change what the session `id` is with `change`, on every replica that serves it: read,
    /// changed and written back only if nobody changed it meanwhile (else read again), and
    /// never brought back once ended.
    pub(super) async fn change(
        &self,
        id: &str,
        change: impl Fn(&mut State),
    ) -> Result<(), StoreError> {
        for _ in 0..CHANGE_ATTEMPTS {
            let Some((mut state, was)) = self.read_as_kept(id).await? else {
                return Err(StoreError::failed(format!("session {id} ended or expired")));
            };
            change(&mut state);
            let record = SessionRecord {
                id: id.to_owned(),
                state: serde_json::to_value(&state).map_err(StoreError::backend)?,
                expires_at_ms: self.expiry(),
            };
            if self.store.update_session(&record, &was).await? {
                self.apply(id, &state);
                return Ok(());
            }
        }
        Err(StoreError::failed(format!(
            "session {id} changed on other replicas {CHANGE_ATTEMPTS} times while this change was made"
        )))
    }

    /// This replica no longer serves the session `id`.
    pub(crate) fn forget(&self, id: &str) {
        let Some(session) = self.lock().remove(id) else {
            return;
        };
        for uri in &session.uris {
            self.notifier.unsubscribe(uri, session.key);
        }
    }

    /// Forget the sessions not in `served` (they closed here); the ids of those left.
    pub(crate) fn retain(&self, served: &[String]) -> Vec<String> {
        let gone: Vec<String> = self
            .lock()
            .keys()
            .filter(|id| !served.contains(id))
            .cloned()
            .collect();
        for id in &gone {
            self.forget(id);
        }
        self.lock().keys().cloned().collect()
    }

    /// The sessions this replica serves.
    pub(crate) fn served(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Keep the client's `message` for the copy of a session that `to` names
    /// (`<session>/<mark>`, its answer to that copy's request) and tell the replicas.
    pub(crate) async fn forward(&self, to: &str, message: &Value) -> Result<(), StoreError> {
        let soon = crate::clock::now_ms().saturating_add(FORWARDED_FOR_MS);
        self.store.forward_to_session(to, message, soon).await
    }

    /// The client's messages forwarded to the copy of a session that `to` names.
    pub(crate) async fn forwarded(&self, to: &str) -> Result<Vec<Value>, StoreError> {
        self.store.take_forwarded(to).await
    }

    /// The session `session`'s `GET` stream is open here while the guard lives.
    pub(crate) fn streaming(self: &Arc<Self>, session: &str) -> Streaming {
        *self.streams_lock().entry(session.to_owned()).or_default() += 1;
        Streaming {
            kept: Arc::clone(self),
            session: session.to_owned(),
        }
    }

    /// Whether a `GET` stream of `session` is open here.
    pub(crate) fn streams_here(&self, session: &str) -> bool {
        self.streams_lock().contains_key(session)
    }

    /// Where what a session's client hears outside a request's stream waits for the replica
    /// holding its `GET` stream.
    pub(crate) fn stream_of(session: &str) -> String {
        format!("{session}/stream")
    }

    /// Send `notification` to the client of `session` on its `GET` stream: here when it is
    /// open here (or open nowhere: the copy keeps it as rmcp does), else through the store
    /// to the replica that holds it.
    pub(super) async fn notify(
        &self,
        session: &str,
        peer: &Peer<RoleServer>,
        notification: rmcp::model::ServerNotification,
    ) -> Result<(), String> {
        if self.streams_here(session) {
            return peer
                .send_notification(notification)
                .await
                .map_err(|e| e.to_string());
        }
        let message = serde_json::to_value(&notification).map_err(|e| e.to_string())?;
        self.forward(&Self::stream_of(session), &message)
            .await
            .map_err(|e| e.to_string())
    }

    /// Send the client of `session` what other replicas left for its `GET` stream, open here.
    pub(crate) async fn deliver_to_stream(&self, session: &str) {
        let peer = match self.lock().get(session) {
            Some(live) => live.peer.clone(),
            None => return,
        };
        let messages = match self.forwarded(&Self::stream_of(session)).await {
            Ok(messages) => messages,
            Err(error) => {
                tracing::warn!(%error, session, "notifications for a stream here could not be taken");
                return;
            }
        };
        for message in messages {
            match serde_json::from_value::<rmcp::model::ServerNotification>(message) {
                Ok(notification) => {
                    if let Err(error) = peer.send_notification(notification).await {
                        tracing::debug!(%error, session, "a forwarded notification was not sent");
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, session, "a forwarded notification is not one")
                }
            }
        }
    }

    fn streams_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// Set the log level.
    pub(super) fn set_level(&mut self, level: LoggingLevel) {
        self.log_level = Some(level);
    }

    /// Subscribe to `uri`.
    pub(super) fn subscribe(&mut self, uri: &str) {
        if !self.subscriptions.iter().any(|u| u == uri) {
            self.subscriptions.push(uri.to_owned());
        }
    }

    /// Unsubscribe from `uri`.
    pub(super) fn unsubscribe(&mut self, uri: &str) {
        self.subscriptions.retain(|u| u != uri);
    }
}
