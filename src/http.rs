//! Serving over HTTP inside your own application.
//!
//! [`Server::serve_http`](crate::Server::serve_http) is enough for a server of its own; use
//! [`serve_router`] and [`axum`] (the version the server is built on) to mount the MCP endpoint
//! beside your routes.

pub use abilities_runtime::{NotReady, axum, serve_router};
