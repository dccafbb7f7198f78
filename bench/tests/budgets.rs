//! Budgets of the in-process call that do not depend on the machine: the size of the
//! future `ServerHandler::call_tool` returns, and of rmcp's dispatch of a request to it
//! (`Service::handle_request`, as large as the handler's largest method, and what a
//! transport spawns): both are moved on the way to the executor, so their bytes are copied
//! on every call. Instructions per call are counted by `scripts/instructions.sh`;
//! `call_instructions sizes` prints these sizes beside rmcp's.

use abilities::{Server, ability};
use rmcp::model::{CallToolRequestParams, NumberOrString};
use rmcp::service::RequestContext;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::json;

/// The most a `tools/call` future may take, in bytes.
const CALL_FUTURE_BUDGET: usize = 1536;
/// The most rmcp's dispatch of a request may take, in bytes: its own dispatch of a
/// `#[tool]` router's call takes 4,296, as ours does (every feature on or off).
const DISPATCH_FUTURE_BUDGET: usize = 4608;

/// Count published posts.
#[ability(semantic = "READ", flatten, name = "my-plugin/count-posts")]
fn count_posts(post_type: String) -> u64 {
    post_type.len() as u64
}

#[tokio::test]
async fn a_tool_calls_futures_stay_within_their_budgets() {
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
    let ctx = || RequestContext::new(NumberOrString::Number(1), running.peer().clone());
    let request =
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(params.clone()));
    let dispatch = std::mem::size_of_val(&rmcp::Service::handle_request(&handler, request, ctx()));
    assert!(
        dispatch <= DISPATCH_FUTURE_BUDGET,
        "rmcp's dispatch future is {dispatch} bytes, over its budget of \
         {DISPATCH_FUTURE_BUDGET}: a method of the handler keeps a large value across an \
         await (box its rarer work)"
    );
    let call = ServerHandler::call_tool(&handler, params, ctx());
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
