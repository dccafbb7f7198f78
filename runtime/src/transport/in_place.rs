//! [`InPlace`]: the requests a transport may answer in place, without rmcp's service loop:
//! one request, one result, no stream. The one list both in-place paths (HTTP and stdio)
//! read.

use rmcp::model::ClientRequest;

/// A request answered in place, by its method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InPlace {
    CallTool,
    ListTools,
    ListResources,
    ListResourceTemplates,
    ListPrompts,
}

impl InPlace {
    /// Every method answered in place.
    const ALL: [Self; 5] = [
        Self::CallTool,
        Self::ListTools,
        Self::ListResources,
        Self::ListResourceTemplates,
        Self::ListPrompts,
    ];

    /// What `request` is, if it may be answered in place.
    pub(super) fn of(request: &ClientRequest) -> Option<Self> {
        match request {
            ClientRequest::CallToolRequest(_) => Some(Self::CallTool),
            ClientRequest::ListToolsRequest(_) => Some(Self::ListTools),
            ClientRequest::ListResourcesRequest(_) => Some(Self::ListResources),
            ClientRequest::ListResourceTemplatesRequest(_) => Some(Self::ListResourceTemplates),
            ClientRequest::ListPromptsRequest(_) => Some(Self::ListPrompts),
            _ => None,
        }
    }

    /// Whether a request named `method` may be answered in place.
    pub(super) fn named(method: &str) -> bool {
        Self::ALL.iter().any(|kind| kind.method() == method)
    }

    /// Its JSON-RPC method.
    pub(super) fn method(self) -> &'static str {
        match self {
            Self::CallTool => "tools/call",
            Self::ListTools => "tools/list",
            Self::ListResources => "resources/list",
            Self::ListResourceTemplates => "resources/templates/list",
            Self::ListPrompts => "prompts/list",
        }
    }
}
