//! The PostgreSQL store's ear: one connection of its own that `LISTEN`s for what the other
//! replicas publish (resource updates, task and session events) and hands it to this process's
//! subscribers, connecting again when it breaks.

use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;

use super::postgres::{CHANNEL, SESSIONS_CHANNEL, TASKS_CHANNEL};
use super::{SessionEvent, TaskEvent};

/// Where what other replicas publish goes in this process.
pub(super) struct Heard {
    pub(super) updates: broadcast::Sender<String>,
    pub(super) tasks: broadcast::Sender<TaskEvent>,
    pub(super) sessions: broadcast::Sender<SessionEvent>,
}

impl Heard {
    /// Hand a notification on `channel` to its subscribers, unless it is this process's own.
    fn hand(&self, origin: &str, channel: &str, payload: &str) {
        let Some((from, rest)) = payload.split_once(' ') else {
            return;
        };
        if from == origin {
            return;
        }
        if channel == CHANNEL {
            let _ = self.updates.send(rest.to_owned());
            return;
        }
        if channel == SESSIONS_CHANNEL {
            let event = match rest.split_once(' ') {
                Some(("changed", id)) => SessionEvent::Changed(id.to_owned()),
                Some(("ended", id)) => SessionEvent::Ended(id.to_owned()),
                Some(("forwarded", id)) => SessionEvent::Forwarded(id.to_owned()),
                _ => return,
            };
            let _ = self.sessions.send(event);
            return;
        }
        let event = match rest.split_once(' ') {
            Some(("changed", id)) => TaskEvent::Changed(id.to_owned()),
            Some(("signalled", id)) => TaskEvent::Signalled(id.to_owned()),
            _ => return,
        };
        let _ = self.tasks.send(event);
    }
}

/// Hear the updates and task events other replicas publish and hand them to this process's
/// subscribers; on a lost connection, connect again (a second later, then up to every 30
/// seconds).
pub(super) async fn listen(url: String, origin: String, heard: Heard, stop: CancellationToken) {
    let mut wait = Duration::from_secs(1);
    // Whether this is a connection after the first (one that broke before it).
    let mut reconnected = false;
    loop {
        if stop.is_cancelled() {
            return;
        }
        match tokio_postgres::connect(&url, NoTls).await {
            Ok((client, mut connection)) => {
                let mut messages =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let sql =
                    format!("LISTEN {CHANNEL}; LISTEN {TASKS_CHANNEL}; LISTEN {SESSIONS_CHANNEL}");
                // The connection must be driven for LISTEN to be answered.
                let ready = {
                    let mut listening = std::pin::pin!(client.batch_execute(&sql));
                    loop {
                        tokio::select! {
                            done = &mut listening => break done.is_ok(),
                            message = messages.next() => if message.is_none() { break false },
                        }
                    }
                };
                if ready {
                    wait = Duration::from_secs(1);
                    // Back after a break: what was announced meanwhile is lost.
                    if reconnected {
                        let _ = heard.tasks.send(TaskEvent::Missed);
                        let _ = heard.sessions.send(SessionEvent::Missed);
                    }
                    reconnected = true;
                    loop {
                        let message = tokio::select! {
                            () = stop.cancelled() => return,
                            message = messages.next() => message,
                        };
                        let Some(message) = message else { break };
                        match message {
                            Ok(AsyncMessage::Notification(note)) => {
                                heard.hand(&origin, note.channel(), note.payload());
                            }
                            Ok(_) => {}
                            Err(error) => {
                                tracing::warn!(%error, "lost the resource update listener");
                                break;
                            }
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "cannot listen for resource updates"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}
