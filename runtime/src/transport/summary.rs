//! What the HTTP gate needs to know of one JSON-RPC message, read once in front of rmcp: its
//! id, method, tool name, pagination cursor and followed task ids. Strings are borrowed from
//! the body; `arguments` and every other member are skipped unread. A member of the wrong type
//! reads as absent (rmcp, which parses the message for itself, answers for it).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// One message, as far as the gate reads it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Summary<'a> {
    /// The id, when it is a valid JSON-RPC id (a string or a number).
    #[serde(default, deserialize_with = "id")]
    pub(crate) id: Option<Value>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "params")]
    pub(crate) params: Option<Params<'a>>,
}

/// The members of `params` the gate reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Params<'a> {
    /// The tool of a `tools/call`.
    #[serde(default, borrow, deserialize_with = "text")]
    pub(crate) name: Option<Cow<'a, str>>,
    /// The cursor of a list request, by its JSON type.
    #[serde(default, deserialize_with = "cursor")]
    pub(crate) cursor: Option<Cursor>,
    /// `notifications.taskIds` of `subscriptions/listen`.
    #[serde(default, deserialize_with = "notifications")]
    pub(crate) notifications: Option<Vec<String>>,
}

/// A cursor as sent: only a string (or `null`) is one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Cursor {
    Text,
    Null,
    /// Anything else, by its JSON type's name.
    Other(&'static str),
}

impl<'a> Summary<'a> {
    /// The summary of `body`; empty when it is not a JSON object.
    pub(crate) fn read(body: &'a [u8]) -> Self {
        serde_json::from_slice(body).unwrap_or_default()
    }

    /// Whether the message is a request (it has an id) for `method`.
    pub(crate) fn is_request(&self, method: &str) -> bool {
        self.id.is_some() && self.method.as_deref() == Some(method)
    }

    /// The id to answer with: the message's own, or `null`.
    pub(crate) fn answer_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// A list request whose `cursor` is not a string: the -32602 message. rmcp reads such
    /// params as absent and would answer the first page.
    pub(crate) fn check_cursor(&self) -> Result<(), String> {
        let method = self.method.as_deref().unwrap_or_default();
        match self.params.as_ref().and_then(|p| p.cursor.as_ref()) {
            Some(Cursor::Other(kind)) if super::PAGINATED.contains(&method) => Err(format!(
                "Invalid params for {method}: the cursor must be a string, got {kind}"
            )),
            _ => Ok(()),
        }
    }

    /// The task ids a `subscriptions/listen` request follows (`notifications.taskIds`), which
    /// rmcp's filter type drops.
    pub(crate) fn listened_tasks(&self) -> Option<crate::task::ListenTasks> {
        if self.method.as_deref() != Some("subscriptions/listen") {
            return None;
        }
        let ids = self.params.as_ref()?.notifications.as_ref()?;
        Some(crate::task::ListenTasks::new(
            ids.iter().map(String::as_str),
        ))
    }

    /// The tool a `tools/call` names.
    pub(crate) fn tool(&self) -> Option<&str> {
        self.params.as_ref()?.name.as_deref()
    }
}

/// Reads any JSON value, keeping what `pick` makes of a scalar or a sequence.
struct Loose<F>(F);

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A string (borrowed where the body allows), or `None` for any other value.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    d.deserialize_any(Loose(|kind: Scalar<'de>| match kind {
        Scalar::Text(text) => Some(text),
        _ => None,
    }))
}

/// A string or a number, as a JSON-RPC id; `None` for any other value.
fn id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    d.deserialize_any(Loose(|kind: Scalar<'de>| match kind {
        Scalar::Text(s) => Some(Value::from(s.into_owned())),
        Scalar::Number(n) => Some(n),
        _ => None,
    }))
}

/// The JSON type of a cursor.
fn cursor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cursor>, D::Error> {
    d.deserialize_any(Loose(|kind: Scalar<'de>| {
        Some(match kind {
            Scalar::Text(_) => Cursor::Text,
            Scalar::Null => Cursor::Null,
            Scalar::Number(n) => Cursor::Other(crate::normalize::json_type(&n)),
            Scalar::Bool => Cursor::Other("boolean"),
            Scalar::Object => Cursor::Other("object"),
            Scalar::Array => Cursor::Other("array"),
        })
    }))
}

/// A value as [`Loose`] hands it to its picker.
enum Scalar<'de> {
    Text(Cow<'de, str>),
    Number(Value),
    Bool,
    Null,
    Object,
    Array,
}

impl<'de, T, F: FnOnce(Scalar<'de>) -> Option<T>> Visitor<'de> for Loose<F> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Text(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Text(Cow::Owned(v.to_owned()))))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Bool))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Number(Value::from(v))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Number(Value::from(v))))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Number(Value::from(v))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((self.0)(Scalar::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok((self.0)(Scalar::Object))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok((self.0)(Scalar::Array))
    }
}

/// `params` when it is an object.
fn params<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Params<'de>>, D::Error> {
    struct Object;
    impl<'de> Visitor<'de> for Object {
        type Value = Option<Params<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Params::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            skip_seq(seq).map(|()| None)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(Object)
}

/// `notifications.taskIds`: the strings among them, when it is an array.
fn notifications<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    struct Notifications {
        #[serde(default, rename = "taskIds", deserialize_with = "task_ids")]
        task_ids: Option<Vec<String>>,
    }
    let found = Option::<Value>::deserialize(d)?;
    Ok(found
        .and_then(|v| Notifications::deserialize(v).ok())
        .and_then(|n| n.task_ids))
}

fn task_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let found = Option::<Value>::deserialize(d)?;
    Ok(found.and_then(|v| match v {
        Value::Array(items) => Some(
            items
                .into_iter()
                .filter_map(|i| match i {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_the_gate_needs_and_skips_the_rest() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call",
            "params":{"name":"count-posts","arguments":{"cursor":5,"deep":[1,{"a":2}]}}}"#;
        let s = Summary::read(body);
        assert_eq!(s.id, Some(Value::from(7)));
        assert!(s.is_request("tools/call"));
        assert_eq!(s.tool(), Some("count-posts"));
        assert!(matches!(s.method, Some(Cow::Borrowed(_))));
        assert_eq!(s.params.as_ref().and_then(|p| p.cursor.as_ref()), None);
    }

    #[test]
    fn a_member_of_the_wrong_type_reads_as_absent() {
        let s = Summary::read(br#"{"id":{"x":1},"method":5,"params":{"name":[1],"cursor":7}}"#);
        assert_eq!(s.id, None);
        assert_eq!(s.method, None);
        assert_eq!(s.tool(), None);
        assert_eq!(
            s.params.and_then(|p| p.cursor),
            Some(Cursor::Other("integer"))
        );
        let s = Summary::read(br#"{"id":"a","method":"x","params":[1,2]}"#);
        assert_eq!(s.answer_id(), Value::from("a"));
        assert!(s.params.is_none());
        assert!(Summary::read(b"[1]").method.is_none());
        assert!(Summary::read(b"not json").method.is_none());
    }

    #[test]
    fn reads_followed_task_ids() {
        let s = Summary::read(
            br#"{"id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["a",2,"b"]}}}"#,
        );
        assert_eq!(
            s.params.and_then(|p| p.notifications),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
    }

    /// What the transports read of a message's bytes.
    fn read(message: &Value) -> Option<crate::task::ListenTasks> {
        super::super::listened_tasks(message.to_string().as_bytes())
    }

    #[test]
    fn a_listen_request_names_the_tasks_it_follows() {
        let listen = |params| json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params});
        assert_eq!(
            read(&listen(
                json!({"notifications": {"taskIds": ["a", 7, "b"]}})
            )),
            Some(crate::task::ListenTasks(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            read(&listen(
                json!({"notifications": {"toolsListChanged": true}})
            )),
            None
        );
        assert_eq!(
            read(&listen(
                json!({"notifications": {"taskIds": ["a", "b", "a", "b", "c"]}})
            )),
            Some(crate::task::ListenTasks(vec![
                "a".into(),
                "b".into(),
                "c".into()
            ]))
        );
        let many: Vec<String> = (0..500).map(|i| i.to_string()).collect();
        let followed = read(&listen(json!({"notifications": {"taskIds": many}})));
        assert_eq!(followed.map(|t| t.0.len()), Some(100));
        let call = json!({"method": "tools/call", "params": {"notifications": {"taskIds": ["a"]}}});
        assert_eq!(read(&call), None);
    }
}
