//! Prompts: abilities served as MCP prompts.
//!
//! An ability that returns a [`Prompt`] and declares `kind = "prompt"` is served by `prompts/get`.

pub use abilities_runtime::{Prompt, PromptMessage, Role};
