//! An in-process MCP client: the real protocol over an in-memory pipe, so abilities are tested
//! the way clients call them, without spawning a process or opening a port.

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::{Caller, Server, ServerError};

/// A connected in-process client.
///
/// ```standalone_crate
/// use abilities::{Server, ability};
/// use serde_json::json;
///
/// /// Add two numbers.
/// #[ability(semantic = "READ")]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = Server::builder().build().unwrap().connect().await.unwrap();
/// let result = client.call("add", json!({"a": 2, "b": 40})).await.unwrap();
/// assert_eq!(result.structured_content, Some(json!({"result": 42})));
/// assert_eq!(result.is_error, Some(false));
/// # });
/// ```
pub struct TestClient {
    service: RunningService<RoleClient, ()>,
}

impl Server {
    /// Connect an in-process client, as the local caller.
    pub async fn connect(&self) -> Result<TestClient, ServerError> {
        self.connect_as(None).await
    }

    /// Connect an in-process client whose requests come from `caller` (or the local caller).
    pub async fn connect_as(&self, caller: Option<Caller>) -> Result<TestClient, ServerError> {
        let handler = match caller {
            Some(caller) => self.handler(Some(caller)),
            None => self.local_handler(),
        };
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let service = ().serve(client_io).await.map_err(|e| ServerError::Session(e.to_string()))?;
        Ok(TestClient { service })
    }
}

impl TestClient {
    /// `tools/list`, every page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ServiceError> {
        self.service.list_all_tools().await
    }

    /// `tools/call` with JSON arguments (`null` for none).
    pub async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(args) = args {
            params = params.with_arguments(args);
        }
        self.service.call_tool(params).await
    }

    /// The underlying `rmcp` client, for any other request.
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
    }

    /// Close the session.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
