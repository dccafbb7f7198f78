//! What replicas sharing a store tell each other: the channels resource updates, task events
//! and session events travel on, each message marked with its sender, and how a message heard
//! reaches this process's subscribers.

use tokio::sync::broadcast;

use super::{SessionEvent, TaskEvent};

/// The channel resource updates travel on (`<origin> <uri>`).
pub(super) const CHANNEL: &str = "abilities_updates";
/// The channel task events travel on (`<origin> changed <id>`, `<origin> signalled <id>`).
pub(super) const TASKS_CHANNEL: &str = "abilities_tasks";
/// The channel session events travel on (`<origin> changed <id>`, `<origin> ended <id>`,
/// `<origin> forwarded <id>`, `<origin> streamed <stream>`).
pub(super) const SESSIONS_CHANNEL: &str = "abilities_session_events";

/// A fresh mark for this process's messages (128 random bits, hex), so it skips their echo.
pub(super) fn origin() -> Result<String, getrandom::Error> {
    let mut origin = [0u8; 16];
    getrandom::fill(&mut origin)?;
    Ok(origin.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where what other replicas publish goes in this process.
#[derive(Clone)]
pub(super) struct Heard {
    pub(super) updates: broadcast::Sender<String>,
    pub(super) tasks: broadcast::Sender<TaskEvent>,
    pub(super) sessions: broadcast::Sender<SessionEvent>,
}

impl Heard {
    /// Senders with nobody subscribed yet.
    pub(super) fn new() -> Self {
        Self {
            updates: broadcast::channel(1024).0,
            tasks: broadcast::channel(1024).0,
            sessions: broadcast::channel(1024).0,
        }
    }

    /// Hand a message on `channel` to its subscribers, unless it is this process's own.
    pub(super) fn hand(&self, origin: &str, channel: &str, payload: &str) {
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
                Some(("streamed", stream)) => SessionEvent::Streamed(stream.to_owned()),
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

    /// Tell every subscriber that messages may have been lost (the connection to the other
    /// replicas broke and is back).
    pub(super) fn missed(&self) {
        let _ = self.tasks.send(TaskEvent::Missed);
        let _ = self.sessions.send(SessionEvent::Missed);
    }
}
