//! Resource subscriptions: `resources/subscribe` in a session, and `subscriptions/listen`
//! streams (protocol 2026-07-28), which follow resources, list changes and tasks until the
//! stream ends.

use rmcp::RoleServer;
use rmcp::model::{ErrorData, SubscribeRequestParams, SubscriptionFilter};
use rmcp::service::{RequestContext, SubscriptionContext};

use super::{McpHandler, next_session, tasks};
use crate::resource::Subscriber;
use crate::server::{Inner, Listener, Lists, Snapshot};

impl McpHandler {
    /// `resources/subscribe`: the session hears of `uri`'s changes, if it names a resource.
    pub(super) fn subscribe_session(
        &self,
        request: &SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resolves(&request.uri)?;
        self.inner.notifier.subscribe(
            &request.uri,
            Subscriber::Session(self.session, context.peer),
        );
        Ok(())
    }

    /// `uri`, if it names a resource; else the error that says it does not.
    pub(super) fn resolves(&self, uri: &str) -> Result<(), ErrorData> {
        if resolves(&self.inner.snapshot(), uri) {
            Ok(())
        } else {
            Err(super::unknown_resource(uri))
        }
    }

    /// What a listen stream is granted of `requested`: the resources that resolve, and every
    /// list change asked for (each list can change).
    pub(super) fn accepted(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let snapshot = self.inner.snapshot();
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| resolves(&snapshot, uri))
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(uris);
        accepted.tools_list_changed = requested.tools_list_changed.filter(|&on| on);
        accepted.resources_list_changed = requested.resources_list_changed.filter(|&on| on);
        accepted.prompts_list_changed = requested.prompts_list_changed.filter(|&on| on);
        accepted
    }

    /// A `subscriptions/listen` stream, within the streams' caps, until it ends.
    pub(super) async fn listen_stream(
        &self,
        context: SubscriptionContext,
    ) -> Result<(), ErrorData> {
        if self.inner.drain.is_draining() {
            return Err(draining());
        }
        // A place among the streams the server holds, given back when this one ends.
        let _held = self
            .inner
            .streams
            .open(&self.caller(context.request_context()))?;
        let key = next_session();
        let (tasks, mut changes) = tokio::sync::mpsc::unbounded_channel();
        if let Some(ids) = tasks::listened(context.request_context()) {
            if !tasks::declared(context.request_context()) {
                return Err(tasks::required());
            }
            let owner = self.caller(context.request_context());
            self.inner
                .tasks
                .watch(&ids.0, owner.principal(), key, &tasks)
                .await;
        }
        drop(tasks);
        let uris: Vec<String> = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        for uri in &uris {
            self.inner
                .notifier
                .subscribe(uri, Subscriber::Listen(key, context.sink().clone()));
        }
        let accepted = context.accepted();
        let lists = Lists {
            tools: accepted.tools_list_changed == Some(true),
            resources: accepted.resources_list_changed == Some(true),
            prompts: accepted.prompts_list_changed == Some(true),
        };
        if lists != Lists::default() {
            self.inner
                .listeners
                .add(Listener::Listen(key, context.sink().clone(), lists));
        }
        // Whether the stream is cancelled or its future dropped, the subscriptions go.
        let _forget = Forget {
            inner: &self.inner,
            key,
            uris: &uris,
        };
        // Until the stream ends: the followed tasks' changes, as `notifications/tasks`.
        loop {
            tokio::select! {
                () = context.cancelled() => break,
                () = self.inner.drain.started() => return Err(draining()),
                Some(task) = changes.recv() => tasks::notify(context.request_context(), task).await,
            }
        }
        Ok(())
    }
}

/// The end of a listen stream on a server that drains: listen again, and another replica
/// serves the stream.
fn draining() -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode(-32000),
        "The server is stopping: listen again (another replica will serve the stream)",
        Some(serde_json::json!({"reason": "draining", "retryAfterMs": 1000})),
    )
}

/// Forgets a `subscriptions/listen` stream's subscriptions when it ends.
struct Forget<'a> {
    inner: &'a Inner,
    key: u64,
    uris: &'a [String],
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        for uri in self.uris {
            self.inner.notifier.unsubscribe(uri, self.key);
        }
        self.inner.listeners.remove(self.key);
        self.inner.tasks.forget(self.key);
    }
}

/// Whether some resource ability serves `uri`.
fn resolves(snapshot: &Snapshot, uri: &str) -> bool {
    snapshot.skills.serves(uri) || snapshot.catalog.resolve(&snapshot.registry, uri).is_some()
}
