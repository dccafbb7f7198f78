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

    /// The notifications that tell of these changes, by method.
    pub(crate) fn methods(self) -> impl Iterator<Item = &'static str> {
        [
            (self.tools, "notifications/tools/list_changed"),
            (self.resources, "notifications/resources/list_changed"),
            (self.prompts, "notifications/prompts/list_changed"),
        ]
        .into_iter()
        .filter_map(|(changed, method)| changed.then_some(method))
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

/// Where the list changes made on this replica go for the sessions a shared store keeps
/// (protocol 2025 on replicas), which hear them wherever their stream is held.
pub(crate) trait ListStreams: Send + Sync {
    /// `lists` changed: add it to the stream of list changes (once for every endpoint).
    fn changed(&self, lists: Lists) -> futures_util::future::BoxFuture<'_, ()>;
    /// `lists` changed and another endpoint added it: wake this endpoint's readers.
    fn woken(&self);
}

/// Every listener of a server.
#[derive(Default)]
pub(crate) struct Listeners {
    all: Mutex<Vec<Listener>>,
    /// The runtime serving the listeners, for changes made from outside it (another thread).
    runtime: Mutex<Option<tokio::runtime::Handle>>,
    /// Where changes go for the sessions kept in a shared store: one per endpoint that keeps
    /// sessions.
    streams: Mutex<Vec<std::sync::Weak<dyn ListStreams>>>,
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
        self.stream(lists);
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

    /// Send the changes made here to `streams` too.
    pub(crate) fn stream_changes_to(&self, streams: std::sync::Weak<dyn ListStreams>) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(streams);
    }

    /// Add `lists` to the stream of list changes the kept sessions follow, from a task of its
    /// own (a change never waits for the store).
    fn stream(&self, lists: Lists) {
        let streams: Vec<std::sync::Arc<dyn ListStreams>> = {
            let mut all = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
            all.retain(|s| s.strong_count() > 0);
            all.iter().filter_map(std::sync::Weak::upgrade).collect()
        };
        let Some((first, others)) = streams.split_first() else {
            return;
        };
        let runtime = tokio::runtime::Handle::try_current().ok().or_else(|| {
            self.runtime
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        let Some(runtime) = runtime else {
            return;
        };
        let (first, others) = (std::sync::Arc::clone(first), others.to_vec());
        runtime.spawn(async move {
            first.changed(lists).await;
            for other in others {
                other.woken();
            }
        });
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
