//! Asking the client: elicitation, sampling, roots, logging and cancellation.
//!
//! An ability asks through its [`Context`](crate::Context); this module holds the answers' types
//! and [`ClientChannel`], the trait a custom transport implements to carry those requests.

pub use abilities_runtime::{
    Ask, CancellationToken, ClientChannel, ClientFuture, ClientRequestFuture, ElicitAction,
    Elicitation, LogLevel, Root,
};
