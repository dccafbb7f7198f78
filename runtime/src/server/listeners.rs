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
    /// An initialized session (keyed by its id), told of the lists the server declared to it.
    Session(u64, Peer<RoleServer>, Lists),
    /// A `subscriptions/listen` request (keyed by a fresh id), told of the lists it asked for.
    Listen(u64, SubscriptionSink, Lists),
}

impl Listener {
    fn key(&self) -> u64 {
        match self {
            Self::Session(key, ..) | Self::Listen(key, ..) => *key,
        }
    }

    fn gone(&self) -> bool {
        match self {
            Self::Session(_, peer, _) => peer.is_transport_closed(),
            Self::Listen(..) => false,
        }
    }
}

/// Every listener of a server.
#[derive(Default)]
pub(crate) struct Listeners {
    all: Mutex<Vec<Listener>>,
    /// The runtime serving the listeners, for changes made from outside it (another thread).
    runtime: Mutex<Option<tokio::runtime::Handle>>,
}

impl Listeners {
    /// Add `listener`, replacing one of the same key, and forget sessions that have closed.
    pub(crate) fn add(&self, listener: Listener) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            *self.runtime.lock().unwrap_or_else(PoisonError::into_inner) = Some(runtime);
        }
        let mut all = self.lock();
        all.retain(|l| l.key() != listener.key() && !l.gone());
        all.push(listener);
    }

    pub(crate) fn remove(&self, key: u64) {
        self.lock().retain(|l| l.key() != key);
    }

    /// Tell every listener of `lists` that they changed. The notifications go out from tasks
    /// of their own, on the runtime that serves the listeners (a change may come from another
    /// thread), so a change never waits for a client.
    pub(crate) fn changed(&self, lists: Lists) {
        let targets: Vec<Listener> = {
            let mut all = self.lock();
            all.retain(|l| !l.gone());
            all.iter()
                .filter(|l| match l {
                    Listener::Session(_, _, wanted) | Listener::Listen(_, _, wanted) => {
                        lists.any(*wanted)
                    }
                })
                .cloned()
                .collect()
        };
        if targets.is_empty() {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current().ok().or_else(|| {
            self.runtime
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        let Some(runtime) = runtime else {
            return;
        };
        // One task per listener: a slow client delays nobody else.
        for target in targets {
            runtime.spawn(async move {
                if let Err(error) = notify(&target, lists).await {
                    tracing::debug!(%error, "a list-changed notification was not sent");
                }
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listener>> {
        self.all.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn notify(target: &Listener, lists: Lists) -> Result<(), String> {
    match target {
        Listener::Session(_, peer, wanted) => {
            let lists = Lists {
                tools: lists.tools && wanted.tools,
                resources: lists.resources && wanted.resources,
                prompts: lists.prompts && wanted.prompts,
            };
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
