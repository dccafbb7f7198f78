//! Budgets of the in-process call that do not depend on the machine: the size of the
//! future `ServerHandler::call_tool` returns (moved on the way to the executor, so its
//! bytes are copied on every call). Instructions per call are counted by
//! `scripts/instructions.sh`; `call_instructions sizes` prints this size beside rmcp's.

use abilities::{Server, ability};
use rmcp::model::{CallToolRequestParams, NumberOrString};
use rmcp::service::RequestContext;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::json;

/// The most a `tools/call` future may take, in bytes.
const CALL_FUTURE_BUDGET: usize = 1536;

/// Count published posts.
#[ability(semantic = "READ", flatten, name = "my-plugin/count-posts")]
fn count_posts(post_type: String) -> u64 {
    post_type.len() as u64
}

#[tokio::test]
async fn a_tool_calls_future_stays_within_its_budget() {
    let server = Server::builder()
        .build()
        .unwrap_or_else(|e| panic!("server: {e}"));
    let handler = server.handler(None);
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (running, client) = tokio::join!(handler.clone().serve(server_io), ().serve(client_io));
    let running = running.unwrap_or_else(|e| panic!("server: {e}"));
    let params: CallToolRequestParams = serde_json::from_value(
        json!({"name": "my-plugin-count-posts", "arguments": {"input": "post"}}),
    )
    .unwrap_or_else(|e| panic!("params: {e}"));
    let ctx = RequestContext::new(NumberOrString::Number(1), running.peer().clone());
    let call = ServerHandler::call_tool(&handler, params, ctx);
    let size = std::mem::size_of_val(&call);
    assert!(
        size <= CALL_FUTURE_BUDGET,
        "call_tool's future is {size} bytes, over its budget of {CALL_FUTURE_BUDGET}: a large \
         value is kept across an await (see `call_instructions sizes`)"
    );
    // The call it is still answers.
    let answer = call.await.unwrap_or_else(|e| panic!("call: {e}"));
    let rmcp::model::CallToolResponse::Complete(result) = answer else {
        panic!("a plain call answers at once");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 4})));
    drop(client);
}
