//! The `site` example's `my-plugin-count-posts`, written by hand with rmcp's own macros over
//! the same database: the baseline `rmcp_site`, `loadgen` and the `e2e` bench measure
//! abilities against.

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::site::{Db, PostType};

/// The hand-written server.
#[derive(Clone)]
pub(crate) struct RmcpSite {
    db: Arc<Db>,
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    input: PostType,
}

#[derive(Serialize, JsonSchema)]
struct Count {
    result: u64,
}

impl RmcpSite {
    /// A server over `db`.
    pub(crate) fn new(db: Arc<Db>) -> Self {
        Self {
            db,
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl RmcpSite {
    /// Count published posts of one type.
    #[tool(name = "my-plugin-count-posts")]
    async fn count_posts(
        &self,
        Parameters(CountArgs { input }): Parameters<CountArgs>,
    ) -> Result<Json<Count>, String> {
        self.db
            .count(input)
            .await
            .map(|result| Json(Count { result }))
            .map_err(|e| e.message().to_owned())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RmcpSite {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
