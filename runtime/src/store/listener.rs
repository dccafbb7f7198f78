//! The PostgreSQL store's ear: one connection of its own that `LISTEN`s for what the other
//! replicas publish (resource updates, task and session events) and hands it to this process's
//! subscribers, connecting again when it breaks.

use std::time::Duration;

use futures_util::StreamExt as _;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;

use super::heard::{CHANNEL, Heard, SESSIONS_CHANNEL, TASKS_CHANNEL};

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
                        heard.missed();
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
