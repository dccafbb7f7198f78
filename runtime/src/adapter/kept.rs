//! Sessions kept in a store that replicas share (protocol 2025, stateful HTTP): what a
//! session is (the client's `initialize`, the caller that opened it, its log level and
//! subscriptions) is written when it opens and when its client changes it, never on a call;
//! a replica that meets the session reads it, and reads it again when another replica
//! changes it. What its client hears outside its requests goes into a stream the store keeps
//! a while, which the replica holding the client's `GET` stream sends and which a client that
//! lost that stream resumes on any replica.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::LoggingLevel;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

use super::level::from_rmcp_level;
use crate::Caller;
use crate::resource::{ResourceNotifier, UpdateStreams};
use crate::server::{ListStreams, Listeners, Lists};
use crate::store::{SessionEvents, SessionRecord, Store, StoreError, StreamRead};

/// How long an answer forwarded to another replica is kept for it (it is taken at once; one
/// nobody takes is swept).
const FORWARDED_FOR_MS: u64 = 60_000;

/// How many times a change to a session is tried while other replicas change it at once.
const CHANGE_ATTEMPTS: usize = 8;

/// How long what a session's client hears outside its requests is kept, so a client that
/// lost its stream resumes it, on any replica, with what it missed.
pub(crate) const STREAM_KEPT_FOR: Duration = Duration::from_secs(300);

/// The key of the mark a session's stream leaves when it ends: what it sent up to.
const SENT_MARK: &str = "io.github.abilities-rs/sent";

/// The position a stream's end mark names, if `message` is one.
pub(crate) fn sent_mark(message: &Value) -> Option<u64> {
    message.get(SENT_MARK)?.as_u64()
}

/// The sessions of one endpoint as its store keeps them, and those this replica serves.
pub(crate) struct Kept {
    store: Arc<dyn Store>,
    /// How long a session lives without a request.
    idle: Duration,
    /// The sessions this replica serves, by id.
    live: Mutex<HashMap<String, Live>>,
    /// This process's mark, random: the part every copy of a session made here has in its
    /// requests' ids.
    replica: String,
    /// The streams a message was just added to here (the store tells only the others).
    appended: broadcast::Sender<String>,
}

/// A session this replica serves: where its log level takes effect, and the resources it
/// follows.
struct Live {
    level: Arc<AtomicU8>,
    /// The resources it is subscribed to.
    uris: Vec<String>,
}

impl Live {
    fn new(level: Arc<AtomicU8>) -> Self {
        Self {
            level,
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
    /// Leave the session's log level.
    pub(super) fn join(&self, level: Arc<AtomicU8>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Live::new(level));
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
    /// The store's last stream position when it opened: a first stream starts there.
    #[serde(default)]
    stream_from: u64,
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
        listeners: &Listeners,
        idle: Duration,
    ) -> Option<Arc<Self>> {
        store.is_shared().then(|| {
            let mut replica = [0u8; 4];
            if let Err(error) = getrandom::fill(&mut replica) {
                tracing::warn!(%error, "no randomness for this replica's mark: the clock's");
                replica = (crate::clock::now_ms() as u32).to_le_bytes();
            }
            let kept = Arc::new(Self {
                store: Arc::clone(store),
                idle,
                live: Mutex::default(),
                replica: replica.iter().map(|b| format!("{b:02x}")).collect(),
                appended: broadcast::channel(1024).0,
            });
            // A resource's updates go into its stream once, from the replica that made them.
            let streams: Arc<dyn UpdateStreams> = Arc::<Self>::clone(&kept);
            notifier.stream_updates_to(Arc::downgrade(&streams));
            // And list changes, once, from the replica whose registry changed.
            let lists: Arc<dyn ListStreams> = Arc::<Self>::clone(&kept);
            listeners.stream_changes_to(Arc::downgrade(&lists));
            kept
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
        let stream_from = self.store.read_streams(&[], 0, 0).await?.last;
        let state = State {
            initialize,
            owner: caller.principal().to_owned(),
            anonymous: caller.is_anonymous(),
            log_level: None,
            subscriptions: Vec::new(),
            stream_from,
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
    /// level in `level` and its subscriptions as its record says; whether the store still
    /// keeps it (it may have ended since it was read).
    pub(super) async fn restored(&self, id: &str, level: Arc<AtomicU8>) -> bool {
        self.lock().insert(id.to_owned(), Live::new(level));
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

    /// Make this replica's copy of the session `id` what `state` says. A change of the
    /// resources it follows wakes its stream here, which follows them from now on (the store
    /// does not echo this replica's own changes back to it).
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
        if session.uris != state.subscriptions {
            session.uris.clone_from(&state.subscriptions);
            drop(live);
            let _ = self.appended.send(Self::session_stream(id));
        }
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

    /// This replica no longer serves the session `id` (its streams here end).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
        let _ = self.appended.send(Self::session_stream(id));
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

    /// The stream of what the client of session `id` hears outside its requests.
    pub(crate) fn session_stream(id: &str) -> String {
        format!("session:{id}")
    }

    /// The stream of the updates of the resource `uri`.
    fn resource_stream(uri: &str) -> String {
        format!("resource:{uri}")
    }

    /// The stream of the changes of the server's lists (tools, resources, prompts).
    const LISTS_STREAM: &'static str = "lists";

    /// The streams the client of session `id` follows: its own, and those of the resources
    /// it is subscribed to; `None` once this replica no longer serves it.
    pub(crate) fn streams_of(&self, id: &str) -> Option<Vec<String>> {
        let live = self.lock();
        let session = live.get(id)?;
        let mut streams = Vec::with_capacity(2 + session.uris.len());
        streams.push(Self::session_stream(id));
        streams.push(Self::LISTS_STREAM.to_owned());
        streams.extend(session.uris.iter().map(|uri| Self::resource_stream(uri)));
        Some(streams)
    }

    /// Add `message` to `stream` and wake its readers here; its position.
    pub(crate) async fn append(&self, stream: &str, message: &Value) -> Result<u64, StoreError> {
        let kept_for = u64::try_from(STREAM_KEPT_FOR.as_millis()).unwrap_or(u64::MAX);
        let until = crate::clock::now_ms().saturating_add(kept_for);
        let position = self.store.append_to_stream(stream, message, until).await?;
        let _ = self.appended.send(stream.to_owned());
        Ok(position)
    }

    /// The messages of `streams` after `after`, oldest first, and the store's last position.
    pub(crate) async fn read_streams(
        &self,
        streams: &[String],
        after: u64,
        limit: usize,
    ) -> Result<StreamRead, StoreError> {
        self.store.read_streams(streams, after, limit).await
    }

    /// Where a stream of session `id` starts: after `last_event_id`, the last event its client
    /// saw, when it names one; else after what the session's previous stream sent (the mark
    /// it left when it ended), or where the session opened (a first stream hears what was
    /// said before it).
    pub(crate) async fn stream_start(
        &self,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<u64, StoreError> {
        if let Some(position) = last_event_id {
            return Ok(position);
        }
        let own = [Self::session_stream(id)];
        let read = self.store.read_streams(&own, 0, 100_000).await?;
        let sent = read.events.iter().rev().find_map(|e| sent_mark(&e.message));
        if let Some(position) = sent {
            return Ok(position);
        }
        Ok(self
            .read(id)
            .await?
            .map_or(read.last, |state| state.stream_from))
    }

    /// Leave in session `id`'s stream the mark that its stream here sent up to `position`.
    pub(crate) async fn mark_sent(&self, id: &str, position: u64) -> Result<(), StoreError> {
        let mark = serde_json::json!({ SENT_MARK: position });
        self.append(&Self::session_stream(id), &mark)
            .await
            .map(drop)
    }

    /// The streams messages are added to here from now on.
    pub(crate) fn appended(&self) -> broadcast::Receiver<String> {
        self.appended.subscribe()
    }

    /// Send `notification` to the client of `session`: into the session's stream, which the
    /// replica holding its `GET` stream sends (a client with none open yet hears it when it
    /// opens one).
    pub(super) async fn notify(
        &self,
        session: &str,
        notification: rmcp::model::ServerNotification,
    ) -> Result<(), String> {
        let message = rmcp::model::ServerJsonRpcMessage::notification(notification);
        let message = serde_json::to_value(&message).map_err(|e| e.to_string())?;
        self.append(&Self::session_stream(session), &message)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl UpdateStreams for Kept {
    fn updated<'a>(&'a self, uri: &'a str) -> futures_util::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri.to_owned());
            let notification = rmcp::model::ServerNotification::ResourceUpdatedNotification(
                rmcp::model::ResourceUpdatedNotification::new(param),
            );
            let message = rmcp::model::ServerJsonRpcMessage::notification(notification);
            let appended = match serde_json::to_value(&message) {
                Ok(message) => self
                    .append(&Self::resource_stream(uri), &message)
                    .await
                    .map(drop),
                Err(error) => Err(StoreError::backend(error)),
            };
            if let Err(error) = appended {
                tracing::error!(%error, uri, "a resource update could not reach the sessions following it");
            }
        })
    }

    fn woken(&self, uri: &str) {
        let _ = self.appended.send(Self::resource_stream(uri));
    }
}

impl ListStreams for Kept {
    fn changed(&self, lists: Lists) -> futures_util::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            for method in lists.methods() {
                let message = serde_json::json!({"jsonrpc": "2.0", "method": method});
                if let Err(error) = self.append(Self::LISTS_STREAM, &message).await {
                    tracing::error!(%error, method, "a list change could not reach the sessions kept in the store");
                }
            }
        })
    }

    fn woken(&self) {
        let _ = self.appended.send(Self::LISTS_STREAM.to_owned());
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
