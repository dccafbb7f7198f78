//! A question to the client (elicitation, sampling, roots), as multi-round input asks it and
//! a task waiting for input holds it.

use rmcp::model::InputRequest;
use serde::Deserialize as _;
use serde_json::Value;

use crate::AbilityError;

/// A question to the client, checked to be one the protocol allows: its method, the request
/// as the wire shows it, and a digest of that request.
pub(crate) struct Question {
    method: String,
    pub(crate) request: Value,
    digest: String,
}

impl Question {
    /// `method` (`elicitation/create`, `sampling/createMessage`, `roots/list`) with `params`.
    pub(crate) fn new(method: &str, params: Value) -> Result<Self, AbilityError> {
        let request = serde_json::json!({"method": method, "params": params});
        if let Err(e) = InputRequest::deserialize(&request) {
            return Err(AbilityError::internal(format!(
                "invalid {method} request: {e}"
            )));
        }
        let digest = crate::digest::canonical(&request)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Self {
            method: method.to_owned(),
            request,
            digest,
        })
    }

    /// The method asked (`elicitation/create`...).
    pub(crate) fn method(&self) -> &str {
        &self.method
    }

    /// A digest of the question as the wire shows it.
    pub(crate) fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether `answer` has the shape of this question's result.
    pub(crate) fn answered_by(&self, answer: &Value) -> bool {
        match self.method.as_str() {
            "elicitation/create" => answer["action"].is_string(),
            "sampling/createMessage" => {
                answer["content"].is_object() || answer["content"].is_array()
            }
            "roots/list" => answer["roots"].is_array(),
            _ => answer.is_object(),
        }
    }
}
