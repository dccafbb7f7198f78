//! Calling a server in tests, in process.
//!
//! [`Server::connect`](crate::Server::connect) gives a [`TestClient`]: a real MCP client session
//! over an in-memory pipe. [`Server::test_client`](crate::Server::test_client) sets one up
//! first ([`TestClientBuilder`]): its caller, its protocol version, and its scripted answers
//! to what the server asks ([`UserQuestion`]s, sampling, roots); the client keeps every request
//! and notification it heard. With [`tasks`](TestClientBuilder::tasks) it runs background
//! tasks ([`TestClient::start`], [`Started`]). [`tool_error`] reads a tool error's code, message
//! and details.

pub use abilities_runtime::{Started, TestClient, TestClientBuilder, UserQuestion, tool_error};
