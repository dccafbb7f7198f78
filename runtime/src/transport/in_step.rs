//! A replica's sessions kept in step with the store the replicas share: their expiry moved
//! on while this replica serves them, closed here when another replica ends them, read
//! again when another replica changes them, and handed the client's answers to their
//! requests that landed on another replica.

use std::collections::HashSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager as _};
use tokio::sync::broadcast::error::RecvError;

use super::marked::Marked;
use crate::adapter::Kept;
use crate::store::SessionEvent;

/// Keep the sessions of `manager` in step with `kept` until the manager goes (on the
/// runtime the endpoint is made on).
pub(super) fn start(manager: Weak<Marked>, kept: Arc<Kept>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("made outside a Tokio runtime: sessions are not kept in step");
        return;
    };
    runtime.spawn(in_step(manager, kept));
}

/// How often the expiry of the sessions served here is moved on: a third of the idle time
/// (so a session is touched at least twice before it would expire), at most a minute.
fn period(idle: Duration) -> Duration {
    (idle / 3).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

async fn in_step(manager: Weak<Marked>, kept: Arc<Kept>) {
    let mut events = kept.events();
    let mut tick = tokio::time::interval(period(kept.idle()));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Copies held here that no session record stands for, as of the last beat.
    let mut strays = HashSet::new();
    loop {
        let event = tokio::select! {
            _ = tick.tick() => None,
            event = recv(&mut events) => event,
        };
        let Some(manager) = manager.upgrade() else {
            return;
        };
        match event {
            None => strays = touch(&manager, &kept, &strays).await,
            Some(SessionEvent::Forwarded(to)) => match to.rsplit_once('/') {
                Some((session, mark)) if manager.holds(session, mark) => {
                    deliver(&manager, &kept, &to).await;
                }
                _ => {}
            },
            Some(SessionEvent::Ended(id)) => close(&manager, &kept, &id).await,
            Some(SessionEvent::Changed(id)) => {
                if !kept.reread(&id).await {
                    close(&manager, &kept, &id).await;
                }
            }
            Some(SessionEvent::Missed) => {
                for id in kept.served() {
                    if !kept.reread(&id).await {
                        close(&manager, &kept, &id).await;
                    }
                }
                for to in manager.copies() {
                    deliver(&manager, &kept, &to).await;
                }
            }
            // A stream's readers follow it themselves.
            Some(_) => {}
        }
    }
}

/// The next event, or never when the store carries none (or stopped carrying them).
async fn recv(
    events: &mut Option<tokio::sync::broadcast::Receiver<SessionEvent>>,
) -> Option<SessionEvent> {
    let Some(receiver) = events else {
        return std::future::pending().await;
    };
    match receiver.recv().await {
        Ok(event) => Some(event),
        Err(RecvError::Lagged(missed)) => {
            tracing::warn!(missed, "session events from other replicas were missed");
            Some(SessionEvent::Missed)
        }
        Err(RecvError::Closed) => {
            *events = None;
            std::future::pending().await
        }
    }
}

/// Move on the expiry of the sessions served here (forgetting those that closed by
/// themselves), and close those the store no longer keeps; a copy held here for no session
/// this replica serves (its record went while it was being restored) is closed when it is
/// still one at the next beat. The strays found now.
async fn touch(manager: &Marked, kept: &Kept, strays: &HashSet<String>) -> HashSet<String> {
    let held = manager.held().await;
    let served = kept.retain(&held);
    let found: HashSet<String> = held.into_iter().filter(|id| !served.contains(id)).collect();
    for id in found.intersection(strays) {
        close(manager, kept, id).await;
    }
    if !served.is_empty() {
        match kept.touch(&served).await {
            Ok(gone) => {
                for id in gone {
                    close(manager, kept, &id).await;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the sessions served here could not be kept alive in the store");
            }
        }
    }
    found
}

/// Close the session `id` here: another replica ended it, or the store no longer keeps it.
async fn close(manager: &Marked, kept: &Kept, id: &str) {
    kept.forget(id);
    let session = SessionId::from(id.to_owned());
    if let Err(error) = manager.close_session(&session).await {
        tracing::debug!(%error, session = id, "closing a session ended elsewhere");
    }
}

/// Hand the copy of a session that `to` names (`<session>/<mark>`) the client's answers
/// other replicas forwarded to it.
async fn deliver(manager: &Marked, kept: &Kept, to: &str) {
    let Some((id, _)) = to.rsplit_once('/') else {
        return;
    };
    let messages = match kept.forwarded(to).await {
        Ok(messages) => messages,
        Err(error) => {
            tracing::warn!(%error, session = id, "forwarded answers could not be taken");
            return;
        }
    };
    let session = SessionId::from(id.to_owned());
    for message in messages {
        let message = match serde_json::from_value::<ClientJsonRpcMessage>(message) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, session = id, "a forwarded message is not one");
                continue;
            }
        };
        if let Err(error) = manager.accept_message(&session, message).await {
            tracing::warn!(%error, session = id, "a forwarded answer found no session here");
        }
    }
}
