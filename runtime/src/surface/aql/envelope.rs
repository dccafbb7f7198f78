//! The MCP-AQL envelope: what an operation or a batch answers, as the tool result.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::limits::too_large;
use super::{Table, Warning, recoverable};
use crate::AbilityError;

/// What one operation answered: its data and the warnings beside it (also what an
/// idempotency key records of it).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Done {
    pub(super) data: Value,
    #[serde(default)]
    pub(super) warnings: Vec<Warning>,
}

/// One operation's envelope: `{success: true, data, warnings?}` or `{success: false, error,
/// confirmation?}`.
#[derive(Debug)]
pub(super) enum Envelope {
    Done(Done),
    Failed(AbilityError),
}

/// A batch's envelope: the items' envelopes in order, and where it halted for a
/// confirmation (always a success: items carry their own outcomes).
#[derive(Debug, Serialize)]
pub(super) struct Batch {
    success: bool,
    data: (),
    pub(super) results: Vec<Item>,
    pub(super) summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) halted_at: Option<Item>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) pending_operations: Option<Vec<Pending>>,
}

impl Batch {
    /// An empty batch envelope of `total` operations.
    pub(super) fn new(total: usize) -> Self {
        Self {
            success: true,
            data: (),
            results: Vec::new(),
            summary: Summary {
                total,
                succeeded: 0,
                failed: 0,
                halted: None,
                pending: None,
            },
            halted_at: None,
            pending_operations: None,
        }
    }
}

/// One item of a batch.
#[derive(Debug, Serialize)]
pub(super) struct Item {
    pub(super) index: usize,
    pub(super) operation: String,
    /// A batch item's envelope is closed (the official batch schema): a confirmation offered
    /// travels in `error.details` only, not beside `error`, and a success is its data alone,
    /// without warnings.
    #[serde(serialize_with = "in_batch")]
    pub(super) result: Envelope,
}

fn in_batch<S: Serializer>(envelope: &Envelope, serializer: S) -> Result<S::Ok, S::Error> {
    envelope.write(false, serializer)
}

/// The counts of a batch.
#[derive(Debug, Serialize)]
pub(super) struct Summary {
    pub(super) total: usize,
    pub(super) succeeded: usize,
    pub(super) failed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) halted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) pending: Option<usize>,
}

/// An operation a halted batch did not run, as it was sent.
#[derive(Debug, Serialize)]
pub(super) struct Pending {
    pub(super) index: usize,
    pub(super) operation: String,
    /// As sent, when it is an object (the official schema's `params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) params: Option<Value>,
}

/// What one request comes to, before it is a tool result.
pub(super) enum Answer {
    One(Envelope),
    Batch(Batch),
    /// A batch request refused whole (malformed, too large): the official batch schema's
    /// failure, `{success: false, error: {code, message}}`, whose error has no details (the
    /// message says the numbers).
    Refused(AbilityError),
}

/// The most warnings an envelope carries, as the draft allows.
pub(super) const MAX_WARNINGS: usize = 10;

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.write(true, serializer)
    }
}

impl Envelope {
    /// The envelope of one operation (`alone`), or of a batch item: a confirmation offered
    /// only in the error's details, and no warnings.
    fn write<S: Serializer>(&self, alone: bool, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Done(done) => {
                // Deduplicated, at most ten.
                let mut warnings: Vec<&Warning> = Vec::new();
                for warning in done.warnings.iter().filter(|_| alone) {
                    if warnings.len() == MAX_WARNINGS {
                        break;
                    }
                    if !warnings.contains(&warning) {
                        warnings.push(warning);
                    }
                }
                Success {
                    success: true,
                    data: &done.data,
                    warnings,
                }
                .serialize(serializer)
            }
            Self::Failed(error) => {
                let confirmation = error.confirmation();
                Failure {
                    success: false,
                    error: ErrorBody {
                        code: error.code().as_str(),
                        message: error.message(),
                        details: error
                            .details()
                            .and_then(Value::as_object)
                            .map(|base| Details {
                                base,
                                confirmation_token: confirmation.map(|c| c.token.as_str()),
                                expires_at: confirmation.map(|c| c.expires_at.as_str()),
                            }),
                    },
                    confirmation: confirmation.filter(|_| alone).map(|c| Offered {
                        token: &c.token,
                        expires_at: &c.expires_at,
                        message: &c.message,
                    }),
                }
                .serialize(serializer)
            }
        }
    }
}

#[derive(Serialize)]
struct Success<'a> {
    success: bool,
    data: &'a Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<&'a Warning>,
}

#[derive(Serialize)]
struct Failure<'a> {
    success: bool,
    error: ErrorBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmation: Option<Offered<'a>>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Details<'a>>,
}

/// An error's details; a confirmation travels in them too, as the draft asks.
#[derive(Serialize)]
struct Details<'a> {
    #[serde(flatten)]
    base: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirmation_token: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<&'a str>,
}

/// A batch request refused whole.
#[derive(Serialize)]
struct BatchFailure<'a> {
    success: bool,
    error: ErrorBody<'a>,
}

/// The top-level `confirmation` of a refusal that offers one.
#[derive(Serialize)]
struct Offered<'a> {
    token: &'a str,
    expires_at: &'a str,
    message: &'a str,
}

/// The envelope as a tool result: its JSON as text; `isError` only for failures the caller
/// cannot fix by changing the request.
pub(super) fn respond(table: &Table, answer: Answer) -> CallToolResult {
    let (text, is_error) = match &answer {
        Answer::One(envelope @ Envelope::Failed(error)) => {
            (serde_json::to_string(envelope), !recoverable(error.code()))
        }
        Answer::One(envelope) => (serde_json::to_string(envelope), false),
        Answer::Batch(batch) => (serde_json::to_string(batch), false),
        Answer::Refused(error) => (
            serde_json::to_string(&BatchFailure {
                success: false,
                error: ErrorBody {
                    code: error.code().as_str(),
                    message: error.message(),
                    details: None,
                },
            }),
            !recoverable(error.code()),
        ),
    };
    let limit = table.config.limits.max_response_size;
    let refused = match text {
        Ok(text) if text.len() <= limit => return tool_result(text, is_error),
        Ok(text) => too_large("response_size", limit, text.len(), "bytes"),
        // JSON values always serialize; were one not to, the caller hears so.
        Err(error) => AbilityError::internal(format!("the answer could not be written: {error}")),
    };
    let is_error = !recoverable(refused.code());
    let text = serde_json::to_string(&Envelope::Failed(refused)).unwrap_or_default();
    tool_result(text, is_error)
}

fn tool_result(text: String, is_error: bool) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.is_error = Some(is_error);
    result
}

/// An operation's `data`: its structured value; without one, its content blocks (a bridged
/// upstream's text, images...): the text itself when there is one text block and nothing
/// else, else `{"content": [blocks]}`; `null` when it returned nothing.
pub(super) fn data_of(value: Option<Value>, content: Option<Vec<crate::Content>>) -> Value {
    let blocks = match (value, content) {
        (Some(value), _) => return value,
        (None, Some(blocks)) if !blocks.is_empty() => blocks,
        _ => return Value::Null,
    };
    // The data is JSON: the blocks as the wire writes them (another server's as it sent them).
    let mut blocks: Vec<Value> = blocks
        .iter()
        .filter_map(|b| serde_json::to_value(b).ok())
        .collect();
    if let [Value::Object(one)] = blocks.as_mut_slice()
        && one.get("type").and_then(Value::as_str) == Some("text")
        && let Some(Value::String(text)) = one.get_mut("text")
    {
        return Value::String(std::mem::take(text));
    }
    Value::Object(Map::from_iter([(
        "content".to_owned(),
        Value::Array(blocks),
    )]))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::data_of;
    use crate::Content;

    #[test]
    fn one_text_block_is_the_data_whoever_made_it() {
        assert_eq!(data_of(None, Some(vec![Content::text("hi")])), json!("hi"));
        // A bridged server's block, passed on as it sent it.
        let forwarded = Content::passthrough(json!({"type": "text", "text": "Echo: hi"})).unwrap();
        assert_eq!(data_of(None, Some(vec![forwarded])), json!("Echo: hi"));
    }

    #[test]
    fn other_content_is_listed_and_a_value_wins() {
        let two = vec![Content::text("a"), Content::image(b"x", "image/png")];
        assert_eq!(
            data_of(None, Some(two)),
            json!({"content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "eA==", "mimeType": "image/png"}
            ]})
        );
        assert_eq!(
            data_of(Some(json!({"n": 1})), Some(vec![Content::text("a")])),
            json!({"n": 1})
        );
        assert_eq!(data_of(None, None), json!(null));
    }
}
