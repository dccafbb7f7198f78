//! How a call reached its handler, as the pipeline and the layers around it keep it: the
//! surface it came through, what that surface hands its handlers, whether it goes on with
//! its rate already counted, and the attempt the idempotency layers follow. A handler never
//! reads it; it travels in the [`Context`](super::Context) so every surface passes one value.

use std::any::Any;
use std::sync::Arc;

use super::Attempt;

#[derive(Clone, Debug, Default)]
pub(crate) struct Route {
    /// The surface the call came through, as the audit trail names it.
    pub(super) via: Option<&'static str>,
    /// The call goes on with one already counted against its rate: a confirmed retry, or
    /// the next round of multi-round input.
    pub(super) continues: bool,
    /// What this attempt at the call did, for the idempotency layers around it.
    pub(super) attempt: Option<Arc<Attempt>>,
    /// What a surface hands its handlers beyond the core context (MCP-AQL's collection
    /// query), typed by the surface that set it.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(super) surface: Option<Arc<dyn Any + Send + Sync>>,
}

impl Route {
    /// A call through `via`.
    pub(super) fn via(via: &'static str) -> Self {
        Self {
            via: Some(via),
            ..Self::default()
        }
    }
}
