//! Shared by the benches: a server-side peer for calling handlers in process.

use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt};

/// A server-side peer from a live in-memory session, to build request contexts with.
pub(crate) async fn peer<S: ServerHandler>(handler: S) -> Peer<RoleServer> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server, client) = tokio::join!(handler.serve(server_io), ().serve(client_io));
    let server = server.unwrap_or_else(|e| panic!("server: {e}"));
    let peer = server.peer().clone();
    // Both ends stay alive for the whole run.
    std::mem::forget(client);
    std::mem::forget(server);
    peer
}

/// A request context for one call.
#[allow(dead_code, reason = "not every bench builds contexts this way")]
pub(crate) fn request(peer: &Peer<RoleServer>) -> RequestContext<RoleServer> {
    RequestContext::new(rmcp::model::NumberOrString::Number(1), peer.clone())
}
