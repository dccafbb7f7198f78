//! A client's message read from its bytes. rmcp's message type is an untagged enum of
//! flattened ones: serde buffers the whole message and tries each kind of request in turn,
//! an error made and dropped for every one that does not fit, on every line. A plain
//! `tools/call` (the message a server reads most) is read straight into its own type
//! instead; anything that is not exactly one (another method, a field JSON-RPC does not
//! have, a malformed value) is read by rmcp's type as before, so what it answers does not
//! change.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientJsonRpcMessage,
    ClientRequest, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};

/// A `tools/call` request, every member named (an unknown one: not this path).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine {
    #[allow(dead_code, reason = "checked by its type: \"2.0\" and nothing else")]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(
        dead_code,
        reason = "checked by its type: \"tools/call\" and nothing else"
    )]
    method: CallToolRequestMethod,
    params: Object<CallToolRequestParams>,
}

/// A `T` read from a JSON object only. A derived struct also takes an array of its fields
/// in order; rmcp's message and params (flattened) take only objects, so this path must too.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Members<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Members(std::marker::PhantomData))
            .map(Object)
    }
}

/// The message in `bytes`, as rmcp's type reads it.
pub(crate) fn client_message(bytes: &[u8]) -> serde_json::Result<ClientJsonRpcMessage> {
    if memchr::memmem::find(bytes, b"\"tools/call\"").is_some()
        && let Ok(Object(line)) = serde_json::from_slice::<Object<CallLine>>(bytes)
    {
        return Ok(call(line));
    }
    serde_json::from_slice(bytes)
}

/// The message rmcp's type would make of `line`: the params' `_meta` goes to the request's
/// extensions, where rmcp's handlers read it.
fn call(line: CallLine) -> ClientJsonRpcMessage {
    let Object(mut params) = line.params;
    let meta = params.meta.take();
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = meta {
        request.extensions.insert(meta);
    }
    JsonRpcMessage::Request(JsonRpcRequest::new(
        line.id,
        ClientRequest::CallToolRequest(request),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What rmcp's own type reads.
    fn rmcp_reads(text: &str) -> serde_json::Result<ClientJsonRpcMessage> {
        serde_json::from_str(text)
    }

    #[test]
    fn a_tool_call_reads_as_rmcp_reads_it() {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "t", "arguments": {"a": [1, {"b": null}]}}}),
            json!({"jsonrpc": "2.0", "id": "x-1", "method": "tools/call",
                   "params": {"name": "t", "_meta": {"progressToken": 3,
                   "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
            json!({"method": "tools/call", "params": {"name": "t", "requestState": "s",
                   "inputResponses": {}, "task": {"ttl": 5}}, "id": 1, "jsonrpc": "2.0"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "t", "_meta": null, "arguments": null}}),
        ];
        for line in lines {
            let text = line.to_string();
            let ours = client_message(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
            let theirs = rmcp_reads(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            // The same message, read back the same (extensions included, as `_meta`).
            assert_eq!(
                serde_json::to_value(&ours).ok(),
                serde_json::to_value(&theirs).ok(),
                "{text}"
            );
            let meta = |m: &ClientJsonRpcMessage| match m {
                JsonRpcMessage::Request(r) => match &r.request {
                    ClientRequest::CallToolRequest(c) => (
                        c.params.clone(),
                        c.extensions
                            .get::<rmcp::model::RequestMetaObject>()
                            .cloned(),
                    ),
                    _ => panic!("not a call"),
                },
                _ => panic!("not a request"),
            };
            assert_eq!(meta(&ours), meta(&theirs), "{text}");
        }
    }

    #[test]
    fn anything_else_is_read_by_rmcp() {
        let lines = [
            // Not JSON-RPC 2.0, no id, an id of another type, an extra member, a bad name.
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":4}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            // Members by position: a derived struct takes them, rmcp does not.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[null,"t",{"x":1},null,null]}"#,
            r#"["2.0",1,"tools/call",{"name":"t"}]"#,
        ];
        for text in lines {
            let ours = client_message(text.as_bytes()).map(|m| serde_json::to_value(m).ok());
            let theirs = rmcp_reads(text).map(|m| serde_json::to_value(m).ok());
            match (ours, theirs) {
                (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{text}"),
                (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
                (ours, theirs) => panic!("{text}: {ours:?} vs {theirs:?}"),
            }
        }
    }
}
