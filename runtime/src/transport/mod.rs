//! Transports: newline-delimited JSON-RPC (stdio, or any byte stream), streamable HTTP, and an
//! in-process client.

pub(crate) mod client;
pub(crate) mod http;
pub(crate) mod stdio;
