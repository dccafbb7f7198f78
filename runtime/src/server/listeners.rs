//! Who hears that a list changed: initialized sessions (protocol 2025) and
//! `subscriptions/listen` streams that asked for list changes (2026-07-28).

use std::sync::{Mutex, PoisonError};

use rmcp::Peer;
use rmcp::RoleServer;
use rmcp::service::SubscriptionSink;

use crate::{Ability, AbilityKind};

/// Which lists a change touches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lists {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Lists {
    /// The list an ability appears in.
    pub(crate) fn of(ability: &Ability) -> Self {
        match ability.kind() {
            AbilityKind::Resource { .. } => Self {
                resources: true,
                ..Self::default()
            },
            AbilityKind::Prompt => Self {
                prompts: true,
                ..Self::default()
            },
            _ => Self {
                tools: true,
                ..Self::default()
            },
        }
    }

    fn any(self, wanted: Self) -> bool {
        (self.tools && wanted.tools)
            || (self.resources && wanted.resources)
            || (self.prompts && wanted.prompts)
    }
}

/// One party told of list changes.
#[derive(Clone)]
pub(crate) enum Listener {
    /// An initialized session (keyed by its id): told of every list.
    Session(u64, Peer<RoleServer>),
    /// A `subscriptions/listen` request (keyed by a fresh id), told of the lists it asked for.
    Listen(u64, SubscriptionSink, Lists),
}

impl Listener {
    fn key(&self) -> u64 {
        match self {
            Self::Session(key, _) | Self::Listen(key, _, _) => *key,
        }
    }

    fn gone(&self) -> bool {
        match self {
            Self::Session(_, peer) => peer.is_transport_closed(),
            Self::Listen(..) => false,
        }
    }
}

/// Every listener of a server.
#[derive(Default)]
pub(crate) struct Listeners {
    all: Mutex<Vec<Listener>>,
}

impl Listeners {
    /// Add `listener`, replacing one of the same key, and forget sessions that have closed.
    pub(crate) fn add(&self, listener: Listener) {
        let mut all = self.lock();
        all.retain(|l| l.key() != listener.key() && !l.gone());
        all.push(listener);
    }

    pub(crate) fn remove(&self, key: u64) {
        self.lock().retain(|l| l.key() != key);
    }

    /// Tell every listener of `lists` that they changed. The notifications go out from a
    /// task of their own: a change never waits for a slow client. Needs a Tokio runtime; with
    /// none (a change made before serving), there is nobody to tell.
    pub(crate) fn changed(&self, lists: Lists) {
        let targets: Vec<Listener> = {
            let mut all = self.lock();
            all.retain(|l| !l.gone());
            all.iter()
                .filter(|l| match l {
                    Listener::Session(..) => true,
                    Listener::Listen(_, _, wanted) => lists.any(*wanted),
                })
                .cloned()
                .collect()
        };
        if targets.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            for target in targets {
                if let Err(error) = notify(&target, lists).await {
                    tracing::debug!(%error, "a list-changed notification was not sent");
                }
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.all.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn notify(target: &Listener, lists: Lists) -> Result<(), String> {
    match target {
        Listener::Session(_, peer) => {
            if lists.tools {
                peer.notify_tool_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if lists.resources {
                peer.notify_resource_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if lists.prompts {
                peer.notify_prompt_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        Listener::Listen(_, sink, wanted) => {
            if lists.tools && wanted.tools {
                sink.notify_tool_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if lists.resources && wanted.resources {
                sink.notify_resource_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
            if lists.prompts && wanted.prompts {
                sink.notify_prompt_list_changed()
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}
