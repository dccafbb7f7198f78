//! The Redis store's ear: one pub/sub connection of its own, subscribed to what the other
//! replicas publish (resource updates, task and session events), handing it to this
//! process's subscribers and connecting again when it breaks.

use std::time::Duration;

use futures_util::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::store::heard::{CHANNEL, Heard, SESSIONS_CHANNEL, TASKS_CHANNEL};

/// Hear what other replicas publish and hand it to this process's subscribers; on a lost
/// connection, connect again (a second later, then up to every 30 seconds), and tell the
/// subscribers that messages may have been missed meanwhile.
pub(super) async fn listen(
    client: redis::Client,
    origin: String,
    heard: Heard,
    stop: CancellationToken,
) {
    let mut wait = Duration::from_secs(1);
    let mut reconnected = false;
    loop {
        if stop.is_cancelled() {
            return;
        }
        match subscribed(&client).await {
            Ok(pubsub) => {
                wait = Duration::from_secs(1);
                if reconnected {
                    heard.missed();
                }
                reconnected = true;
                let mut messages = pubsub.into_on_message();
                loop {
                    let message = tokio::select! {
                        () = stop.cancelled() => return,
                        message = messages.next() => message,
                    };
                    let Some(message) = message else { break };
                    if let Ok(payload) = message.get_payload::<String>() {
                        heard.hand(&origin, message.get_channel_name(), &payload);
                    }
                }
                tracing::warn!("lost the Redis store's subscription");
            }
            Err(error) => tracing::warn!(%error, "cannot subscribe to the Redis store's channels"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

async fn subscribed(client: &redis::Client) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub
        .subscribe(&[CHANNEL, TASKS_CHANNEL, SESSIONS_CHANNEL])
        .await?;
    Ok(pubsub)
}
