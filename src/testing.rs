//! Calling a server in tests, in process.
//!
//! [`Server::connect`](crate::Server::connect) gives a [`TestClient`]: a real MCP client session
//! over an in-memory pipe.

pub use abilities_runtime::TestClient;
