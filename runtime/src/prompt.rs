//! What a prompt ability returns: messages for the client's model.

use serde::Serialize;

use crate::Content;

/// Who speaks a prompt message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says: text, an image, audio, an embedded resource or a resource link.
    pub content: Content,
}

/// The messages a prompt ability returns (`#[ability(prompt, ...)]`), with an optional
/// description of this rendering.
///
/// ```standalone_crate
/// use abilities::{Content, prompt::Prompt, ability};
///
/// /// Ask for a code review.
/// #[ability(semantic = "READ", prompt)]
/// fn review(code: String) -> Prompt {
///     Prompt::new()
///         .user(format!("Review this code:\n{code}"))
///         .assistant("I'll look at naming, errors and tests.")
/// }
/// ```
///
/// A prompt ability may also return a `String` (one user message) or
/// [`Contents`](crate::Contents) (one user message per block).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    pub(crate) description: Option<String>,
    pub(crate) messages: Vec<PromptMessage>,
}

impl Prompt {
    /// A prompt with no messages yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a user message (a `&str` or `String` is a text block).
    #[must_use]
    pub fn user(self, content: impl Into<Content>) -> Self {
        self.message(Role::User, content)
    }

    /// Add an assistant message.
    #[must_use]
    pub fn assistant(self, content: impl Into<Content>) -> Self {
        self.message(Role::Assistant, content)
    }

    /// Add a message.
    #[must_use]
    pub fn message(mut self, role: Role, content: impl Into<Content>) -> Self {
        self.messages.push(PromptMessage {
            role,
            content: content.into(),
        });
        self
    }

    /// Describe this rendering of the prompt (`prompts/get` reports it; default: the ability's
    /// description).
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[PromptMessage] {
        &self.messages
    }

    /// The description, if one was set.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
}
