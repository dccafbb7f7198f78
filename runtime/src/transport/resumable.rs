//! A kept session's `GET` stream (protocol 2025, sessions kept in a store replicas share):
//! sent from the streams the store keeps (the session's own, and those of the resources it
//! follows), every event with its position as its id, so a client that lost the stream
//! opens it again on any replica with `Last-Event-ID` and misses nothing said within the
//! window the store keeps.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use tokio::sync::broadcast::error::RecvError;

use crate::adapter::{Kept, sent_mark};
use crate::store::{SessionEvent, SessionEvents};

/// How long a quiet stream waits before it reads the store again (an announcement may have
/// been lost) and sends a comment that keeps proxies from closing it.
const QUIET: Duration = Duration::from_secs(10);

/// How long a client waits before it opens a lost stream again (SSE `retry`), in ms.
const RETRY_MS: u64 = 1000;

/// How many messages one read of the store takes.
const PAGE: usize = 100;

/// The stream of session `session`, starting after position `after`.
pub(super) fn body(kept: Arc<Kept>, session: String, after: u64) -> Body {
    let reader = Reader {
        events: kept.events(),
        appended: kept.appended(),
        kept,
        session,
        after,
        since: after,
        followed: Vec::new(),
        sent: None,
        pending: VecDeque::from([priming(after)]),
    };
    Body::from_stream(futures_util::stream::unfold(
        reader,
        |mut reader| async move {
            let chunk = reader.next().await?;
            Some((Ok::<Bytes, Infallible>(chunk), reader))
        },
    ))
}

/// The first event: the position the stream starts at, so a client that hears nothing
/// before it loses the stream resumes from there, and how soon to reconnect.
fn priming(after: u64) -> Bytes {
    Bytes::from(format!("id: {after}\nretry: {RETRY_MS}\ndata:\n\n"))
}

/// What a stream has read and sent.
struct Reader {
    kept: Arc<Kept>,
    session: String,
    /// The position read up to.
    after: u64,
    /// Where the stream started.
    since: u64,
    /// The streams read so far: one followed later (a resource subscribed to since) is read
    /// from where this stream started, so nothing added to it before it was followed here is
    /// skipped.
    followed: Vec<String>,
    /// The last position sent, once one was.
    sent: Option<u64>,
    /// Frames read and not yet sent.
    pending: VecDeque<Bytes>,
    /// What other replicas add to streams.
    events: Option<SessionEvents>,
    /// What this replica adds to streams.
    appended: tokio::sync::broadcast::Receiver<String>,
}

impl Reader {
    /// The next frame; `None` once the session is no longer served here.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            let streams = self.kept.streams_of(&self.session)?;
            self.catch_up(&streams).await;
            let read = match self.kept.read_streams(&streams, self.after, PAGE).await {
                Ok(read) => read,
                Err(error) => {
                    tracing::warn!(%error, session = self.session, "a session's stream could not be read");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let complete = read.events.len() < PAGE;
            for event in read.events {
                self.after = self.after.max(event.position);
                if sent_mark(&event.message).is_some() {
                    continue;
                }
                self.sent = Some(event.position);
                self.pending.push_back(Bytes::from(format!(
                    "id: {}\ndata: {}\n\n",
                    event.position, event.message
                )));
            }
            if complete {
                // Positions commit in order: nothing of these streams is left at or below
                // the store's last position.
                self.after = self.after.max(read.last);
            }
            if self.pending.is_empty() && complete && !self.woken(&streams).await {
                return Some(Bytes::from_static(b": keep-alive\n\n"));
            }
        }
    }

    /// Queue what streams followed from now on (and not before) hold up to the position read
    /// so far: the position moved on while they were not followed.
    async fn catch_up(&mut self, streams: &[String]) {
        let added: Vec<String> = streams
            .iter()
            .filter(|s| !self.followed.contains(s))
            .cloned()
            .collect();
        if added.is_empty() {
            return;
        }
        if !self.followed.is_empty() && self.after > self.since {
            match self.kept.read_streams(&added, self.since, PAGE).await {
                Ok(read) => {
                    for event in read.events {
                        if event.position > self.after || sent_mark(&event.message).is_some() {
                            continue;
                        }
                        self.pending.push_back(Bytes::from(format!(
                            "id: {}\ndata: {}\n\n",
                            event.position, event.message
                        )));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, session = self.session, "a followed stream could not be read");
                    return;
                }
            }
        }
        self.followed = streams.to_vec();
    }

    /// Wait until one of `streams` may have grown, or the session changed (the resources it
    /// follows); `false` when the stream stayed quiet.
    async fn woken(&mut self, streams: &[String]) -> bool {
        let quiet = tokio::time::sleep(QUIET);
        tokio::pin!(quiet);
        loop {
            tokio::select! {
                () = &mut quiet => return false,
                added = self.appended.recv() => match added {
                    Ok(stream) if !streams.contains(&stream) => {}
                    _ => return true,
                },
                event = next_event(&mut self.events) => match event {
                    SessionEvent::Streamed(stream) if !streams.contains(&stream) => {}
                    SessionEvent::Changed(id) if id == self.session => {
                        // Its subscriptions, as they are now, before the updates after them.
                        self.kept.reread(&id).await;
                        return true;
                    }
                    SessionEvent::Changed(_)
                    | SessionEvent::Forwarded(_) => {}
                    SessionEvent::Ended(id) if id != self.session => {}
                    _ => return true,
                },
            }
        }
    }
}

impl Drop for Reader {
    /// Leave the mark of what this stream sent, for the next stream a client opens without
    /// `Last-Event-ID`.
    fn drop(&mut self) {
        let (Some(sent), Ok(runtime)) = (self.sent, tokio::runtime::Handle::try_current()) else {
            return;
        };
        let (kept, session) = (Arc::clone(&self.kept), std::mem::take(&mut self.session));
        runtime.spawn(async move {
            if let Err(error) = kept.mark_sent(&session, sent).await {
                tracing::debug!(%error, session, "a stream's end could not be marked");
            }
        });
    }
}

/// The next event from other replicas (`Missed` when some were lost), or never when the
/// store carries none.
async fn next_event(events: &mut Option<SessionEvents>) -> SessionEvent {
    let Some(receiver) = events else {
        return std::future::pending().await;
    };
    match receiver.recv().await {
        Ok(event) => event,
        Err(RecvError::Lagged(_)) => SessionEvent::Missed,
        Err(RecvError::Closed) => {
            *events = None;
            std::future::pending().await
        }
    }
}
