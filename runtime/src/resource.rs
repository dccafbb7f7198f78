//! Abilities served as MCP resources: URI templates, string arguments typed by their schema,
//! what a handler's output becomes as resource contents, and update notifications to
//! subscribers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ResourceContents;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{CallOutput, Content};

/// A string argument (URI variable, prompt argument) as the JSON value its schema wants:
/// the string itself where the schema admits strings, else the JSON it spells (`"42"` -> 42,
/// `"true"` -> true), else the string, for validation to reject with a clear message.
pub(crate) fn typed_argument(text: String, schema: Option<&Value>) -> Value {
    let admits_string = schema.is_none_or(admits_string);
    if admits_string {
        return Value::String(text);
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

fn admits_string(schema: &Value) -> bool {
    let Some(schema) = schema.as_object() else {
        return true;
    };
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        _ => {
            if let Some(Value::Array(values)) = schema.get("enum") {
                return values.iter().any(Value::is_string);
            }
            if let Some(value) = schema.get("const") {
                return value.is_string();
            }
            ["anyOf", "oneOf"].iter().any(|key| {
                schema
                    .get(*key)
                    .and_then(Value::as_array)
                    .is_some_and(|branches| branches.iter().any(admits_string))
            }) || !["anyOf", "oneOf"]
                .iter()
                .any(|key| schema.contains_key(*key))
        }
    }
}

/// The candidate values a schema spells out for completion: its `enum`, `const`s, the
/// `const`s of `oneOf`/`anyOf` branches, or `true`/`false` for a boolean.
pub(crate) fn schema_values(schema: &Value) -> Vec<String> {
    let mut values = Vec::new();
    collect_values(schema, &mut values);
    values.dedup();
    values
}

fn collect_values(schema: &Value, out: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(Value::Array(values)) = schema.get("enum") {
        out.extend(values.iter().filter(|v| !v.is_null()).map(text));
    }
    if let Some(value) = schema.get("const") {
        out.push(text(value));
    }
    for key in ["oneOf", "anyOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_values(branch, out);
        }
    }
    let is_bool = match schema.get("type") {
        Some(Value::String(t)) => t == "boolean",
        Some(Value::Array(types)) => types.iter().any(|t| t == "boolean"),
        _ => false,
    };
    if is_bool && out.is_empty() {
        out.extend(["true".to_owned(), "false".to_owned()]);
    }
}

/// The `contents` of `resources/read` from a call's output: each content block becomes one
/// item (text as text, images, audio and binary resources as blobs, embedded resources as
/// they are; links are skipped); structured output becomes one text item, a string as it is
/// and anything else as JSON.
pub(crate) fn contents(
    uri: &str,
    mime_type: Option<&str>,
    output: CallOutput,
) -> Vec<ResourceContents> {
    let (structured, content, _) = output.into_bare();
    let text = |text: String, default: &str| {
        ResourceContents::text(text, uri).with_mime_type(mime_type.unwrap_or(default))
    };
    let mut items = Vec::new();
    for block in content.into_iter().flatten() {
        match block {
            Content::Text { text: t } => items.push(text(t, "text/plain")),
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                items.push(ResourceContents::blob(data, uri).with_mime_type(mime_type));
            }
            Content::Resource { resource } => items.push(resource.into_contents()),
            Content::ResourceLink { .. } => {}
            Content::Passthrough(block) => {
                items.extend(passthrough_item(uri, mime_type, &block));
            }
        }
    }
    match structured {
        None => {}
        Some(Value::String(t)) => items.push(text(t, "text/plain")),
        Some(value) => items.push(text(value.to_string(), "application/json")),
    }
    items
}

/// The `resources/read` item of a passed-through block, as for the typed ones; `None`
/// (dropped) for a link or an unknown type.
fn passthrough_item(
    uri: &str,
    mime_type: Option<&str>,
    block: &Map<String, Value>,
) -> Option<ResourceContents> {
    let field = |k: &str| block.get(k).and_then(Value::as_str);
    match (
        field("type"),
        field("text"),
        field("data"),
        field("mimeType"),
    ) {
        (Some("text"), Some(text), _, _) => Some(
            ResourceContents::text(text, uri).with_mime_type(mime_type.unwrap_or("text/plain")),
        ),
        (Some("image" | "audio"), _, Some(data), Some(kind)) => {
            Some(ResourceContents::blob(data, uri).with_mime_type(kind))
        }
        // Another server's JSON: read as the protocol's contents, or dropped.
        (Some("resource"), ..) => ResourceContents::deserialize(block.get("resource")?).ok(),
        _ => None,
    }
}

/// Sends `notifications/resources/updated` to the sessions subscribed to a resource, with
/// `resources/subscribe` or (protocol 2026-07-28) `subscriptions/listen`. Cheap to clone.
///
/// Abilities take it as `State<ResourceNotifier>`; the application gets it from
/// [`Server::resource_notifier`](crate::Server::resource_notifier).
///
/// ```standalone_crate
/// use abilities::{resource::ResourceNotifier, State, ability};
///
/// /// The current motto.
/// #[ability(semantic = "READ", resource = "site://motto")]
/// fn motto() -> String {
///     "Ship it".into()
/// }
///
/// /// Change the motto.
/// #[ability(semantic = "UPDATE")]
/// async fn set_motto(motto: String, notifier: State<ResourceNotifier>) {
///     // ... store the motto, then tell subscribers:
///     notifier.updated("site://motto").await;
/// }
/// ```
///
/// With a store shared by replicas (`PostgresStore`), an update is also published to the
/// other replicas, whose subscribers hear it too.
#[derive(Clone, Default)]
pub struct ResourceNotifier {
    subscribers: Arc<Mutex<HashMap<String, Vec<Subscriber>>>>,
    /// Where updates go to reach other replicas, for stores that carry them.
    store: Option<Arc<dyn crate::store::Store>>,
    /// Where an update made here goes for the sessions kept in the store (protocol 2025 on
    /// replicas), which follow it there wherever their stream is held: one per endpoint
    /// that keeps sessions.
    streams: Arc<Mutex<Vec<std::sync::Weak<dyn UpdateStreams>>>>,
}

/// Where the updates made on this replica go for the sessions a shared store keeps.
pub(crate) trait UpdateStreams: Send + Sync {
    /// `uri` changed: add it to the resource's stream (once for every endpoint).
    fn updated<'a>(&'a self, uri: &'a str) -> futures_util::future::BoxFuture<'a, ()>;
    /// `uri` changed and another endpoint added it: wake this endpoint's readers.
    fn woken(&self, uri: &str);
}

#[derive(Clone)]
pub(crate) enum Subscriber {
    /// `resources/subscribe` from a session (keyed by the session's id).
    Session(u64, Peer<RoleServer>),
    /// A `subscriptions/listen` request (keyed by a fresh id).
    Listen(u64, SubscriptionSink),
}

impl Subscriber {
    fn key(&self) -> u64 {
        match self {
            Self::Session(key, _) | Self::Listen(key, _) => *key,
        }
    }
}

impl ResourceNotifier {
    /// The notifier of a server whose store is `store`: when it carries updates between
    /// replicas, this one publishes to them and hands theirs to its own subscribers (on the
    /// runtime the server is built on).
    pub(crate) fn shared(store: &Arc<dyn crate::store::Store>) -> Self {
        let mut notifier = Self::default();
        let Some(mut updates) = store.updates() else {
            return notifier;
        };
        notifier.store = Some(Arc::clone(store));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("built outside a Tokio runtime: other replicas' updates go unheard");
            return notifier;
        };
        let local = Self {
            subscribers: Arc::clone(&notifier.subscribers),
            store: None,
            streams: Arc::default(),
        };
        runtime.spawn(async move {
            loop {
                match updates.recv().await {
                    Ok(uri) => {
                        local.deliver(&uri).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "resource updates from other replicas were missed");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        notifier
    }

    /// Tell every subscriber of `uri` that it changed, here and (with a shared store) on
    /// the other replicas. Subscribers whose session is gone are dropped. Returns how many
    /// were notified here.
    pub async fn updated(&self, uri: &str) -> usize {
        let sent = self.deliver(uri).await;
        if let Some(store) = &self.store
            && let Err(error) = store.publish(uri).await
        {
            tracing::error!(%error, uri, "a resource update could not reach the other replicas");
        }
        let streams: Vec<Arc<dyn UpdateStreams>> = {
            let mut all = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
            all.retain(|s| s.strong_count() > 0);
            all.iter().filter_map(std::sync::Weak::upgrade).collect()
        };
        if let Some((first, others)) = streams.split_first() {
            first.updated(uri).await;
            for other in others {
                other.woken(uri);
            }
        }
        sent
    }

    /// Send the updates made here to `streams` too.
    pub(crate) fn stream_updates_to(&self, streams: std::sync::Weak<dyn UpdateStreams>) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(streams);
    }

    /// Tell this process's subscribers of `uri` that it changed.
    async fn deliver(&self, uri: &str) -> usize {
        let subscribers = self.lock().get(uri).cloned().unwrap_or_default();
        let mut gone = Vec::new();
        let mut sent = 0;
        for subscriber in subscribers {
            let outcome = match &subscriber {
                Subscriber::Session(_, peer) => peer
                    .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                        uri,
                    ))
                    .await
                    .map_err(|e| e.to_string()),
                Subscriber::Listen(_, sink) => sink
                    .notify_resource_updated(uri)
                    .await
                    .map_err(|e| e.to_string()),
            };
            match outcome {
                Ok(()) => sent += 1,
                Err(error) => {
                    tracing::debug!(%error, uri, "dropping a resource subscriber");
                    gone.push(subscriber.key());
                }
            }
        }
        if !gone.is_empty() {
            self.remove_keys(uri, &gone);
        }
        sent
    }

    /// How many subscribers `uri` has.
    pub fn subscribers(&self, uri: &str) -> usize {
        self.lock().get(uri).map_or(0, Vec::len)
    }

    pub(crate) fn subscribe(&self, uri: &str, subscriber: Subscriber) {
        let mut map = self.lock();
        let list = map.entry(uri.to_owned()).or_default();
        list.retain(|s| s.key() != subscriber.key());
        list.push(subscriber);
    }

    pub(crate) fn unsubscribe(&self, uri: &str, key: u64) {
        self.remove_keys(uri, &[key]);
    }

    fn remove_keys(&self, uri: &str, keys: &[u64]) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(uri) {
            list.retain(|s| !keys.contains(&s.key()));
            if list.is_empty() {
                map.remove(uri);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Subscriber>>> {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ResourceNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceNotifier")
            .field("uris", &self.lock().len())
            .finish()
    }
}

/// The arguments object of a call from string arguments, each typed by its property schema.
pub(crate) fn typed_arguments(
    strings: impl IntoIterator<Item = (String, String)>,
    properties: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    strings
        .into_iter()
        .map(|(name, text)| {
            let schema = properties.and_then(|p| p.get(&name));
            let value = typed_argument(text, schema);
            (name, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_take_their_schema_type() {
        let int = json!({"type": "integer"});
        let text = json!({"type": "string"});
        let either = json!({"type": ["string", "null"]});
        let choice = json!({"enum": ["a", "b"]});
        assert_eq!(typed_argument("42".into(), Some(&int)), json!(42));
        assert_eq!(typed_argument("42".into(), Some(&text)), json!("42"));
        assert_eq!(typed_argument("42".into(), Some(&either)), json!("42"));
        assert_eq!(typed_argument("a".into(), Some(&choice)), json!("a"));
        assert_eq!(typed_argument("x1".into(), Some(&int)), json!("x1"));
        assert_eq!(
            typed_argument("true".into(), Some(&json!({"type": "boolean"}))),
            json!(true)
        );
        assert_eq!(
            typed_argument("{\"a\":1}".into(), Some(&json!({"type": "object"}))),
            json!({"a": 1})
        );
    }

    #[test]
    fn schemas_spell_their_values() {
        assert_eq!(
            schema_values(&json!({"enum": ["draft", "publish", null]})),
            ["draft", "publish"]
        );
        assert_eq!(
            schema_values(&json!({"oneOf": [{"const": "a", "title": "A"}, {"const": 2}]})),
            ["a", "2"]
        );
        assert_eq!(
            schema_values(&json!({"type": "boolean"})),
            ["true", "false"]
        );
        assert!(schema_values(&json!({"type": "string"})).is_empty());
    }
}
