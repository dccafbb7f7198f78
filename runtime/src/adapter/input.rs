//! Multi-round input (protocol 2026-07-28): a handler that asks the client something
//! ([`Context::elicit`](crate::Context::elicit), `sample`, `list_roots`) cannot send a request
//! back on that protocol. Instead the call answers `resultType: "input_required"` with the
//! questions and a sealed `requestState`; the client retries with `inputResponses`, and the
//! handler runs again from the start, this time finding its answers.
//!
//! Questions are keyed by the order the handler asks them (`elicitation-0`, `sampling-1`...),
//! so a handler that asks the same questions in the same order on every run gets each answer
//! where it asked. Answers of earlier rounds travel in the state, sealed with the server's key
//! (HMAC-SHA256), bound to the caller and to the request (method, name, arguments) and valid
//! for a lifetime: a tampered, expired or foreign state is refused.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ErrorData, InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{AbilityError, ErrorCode};

/// How long a `requestState` stays valid when the builder sets nothing.
pub(crate) const DEFAULT_STATE_LIFETIME: Duration = Duration::from_secs(600);

/// Seals and opens `requestState`: the server's key and the state's lifetime.
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
    lifetime: Duration,
}

impl StateSeal {
    /// A seal with `key` (at least 32 bytes; checked by the builder) or, without one, a random
    /// key of this process.
    pub(crate) fn new(key: Option<&[u8]>, lifetime: Duration) -> Result<Self, String> {
        let codec = match key {
            Some(key) => RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())?,
            None => {
                let mut key = [0u8; 32];
                getrandom::fill(&mut key).map_err(|e| format!("no randomness for a key: {e}"))?;
                RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())?
            }
        };
        Ok(Self { codec, lifetime })
    }
}

/// What a request is, for binding its state: who sent it, the method, what it names and
/// its arguments.
pub(crate) struct Binding(Vec<u8>);

impl Binding {
    pub(crate) fn new(principal: &str, method: &str, name: &str, arguments: &Value) -> Self {
        let mut hash = Sha256::new();
        hash_canonical(&mut hash, arguments);
        let mut data = Vec::with_capacity(principal.len() + method.len() + name.len() + 35);
        for part in [principal.as_bytes(), method.as_bytes(), name.as_bytes()] {
            data.extend_from_slice(part);
            data.push(0);
        }
        data.extend_from_slice(&hash.finalize());
        Self(data)
    }
}

/// Hash `value` independently of its objects' key order.
fn hash_canonical(hash: &mut Sha256, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hash.update(b"{");
            for key in keys {
                hash_canonical(hash, &Value::String(key.clone()));
                hash.update(b":");
                hash_canonical(hash, &map[key]);
            }
            hash.update(b"}");
        }
        Value::Array(items) => {
            hash.update(b"[");
            for item in items {
                hash_canonical(hash, item);
                hash.update(b",");
            }
            hash.update(b"]");
        }
        scalar => hash.update(scalar.to_string().as_bytes()),
    }
}

/// The sealed payload: every answer the client gave in earlier rounds, and the keys of the
/// questions the last round asked (the only answers a retry may bring).
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    answers: BTreeMap<String, Value>,
    asked: Vec<String>,
}

/// Whether `answer` has the shape of `method`'s result.
pub(crate) fn answers(method: &str, answer: &Value) -> bool {
    match method {
        "elicitation/create" => answer["action"].is_string(),
        "sampling/createMessage" => answer["content"].is_object() || answer["content"].is_array(),
        "roots/list" => answer["roots"].is_array(),
        _ => answer.is_object(),
    }
}

/// One call's rounds: the answers it has and the questions it asked without one.
pub(crate) struct Rounds {
    answers: BTreeMap<String, Value>,
    asked: Mutex<InputRequests>,
    /// The capabilities the handler needed and the client did not declare.
    missing: Mutex<Vec<&'static str>>,
    next: AtomicUsize,
}

impl Rounds {
    /// The rounds of a request: the answers sealed in `state` (verified against `binding`)
    /// and those this retry brings to the questions the state says were asked (others are
    /// ignored). Without a state, the answers are to the call's first questions. A state
    /// that does not verify is refused with `-32602`.
    pub(crate) fn open(
        seal: &StateSeal,
        binding: &Binding,
        state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<Self, ErrorData> {
        let Some(state) = state else {
            return Ok(Self::new(responses.unwrap_or_default()));
        };
        let sealed: Sealed = seal.codec.open_json_with(state, &binding.0).map_err(|e| {
            tracing::debug!(error = %e, "a requestState was refused");
            ErrorData::invalid_params(
                format!("requestState is not valid for this request: {e}"),
                None,
            )
        })?;
        let mut answers = sealed.answers;
        let mut responses = responses.unwrap_or_default();
        for key in sealed.asked {
            if let Some(answer) = responses.remove(&key) {
                answers.insert(key, answer);
            }
        }
        Ok(Self::new(answers))
    }

    fn new(answers: BTreeMap<String, Value>) -> Self {
        Self {
            answers,
            asked: Mutex::new(InputRequests::new()),
            missing: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
        }
    }

    /// Ask `method` (`elicitation/create`, `sampling/createMessage`, `roots/list`) with
    /// `params`, under `key` or the next key in asking order: the client's answer when this round has it, else the question is kept for
    /// the `input_required` answer and the handler stops with `INPUT_REQUIRED`.
    pub(crate) fn ask(
        &self,
        key: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, AbilityError> {
        let key = match key {
            Some(key) => key.to_owned(),
            None => {
                let kind = method.split('/').next().unwrap_or(method);
                format!("{kind}-{}", self.next.fetch_add(1, Ordering::Relaxed))
            }
        };
        // An answer not shaped as the method's result is no answer: the question is asked
        // again.
        if let Some(answer) = self.answers.get(&key).filter(|a| answers(method, a)) {
            return Ok(answer.clone());
        }
        let request = serde_json::json!({"method": method, "params": params});
        let request: InputRequest = serde_json::from_value(request)
            .map_err(|e| AbilityError::internal(format!("invalid {method} request: {e}")))?;
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, request);
        Err(AbilityError::new(
            ErrorCode::InputRequired,
            format!("waiting for the client's answer to {method}"),
        ))
    }

    /// The handler needed `capability` (`elicitation`, `sampling`, `roots`), which the
    /// client did not declare.
    pub(crate) fn missing(&self, capability: &'static str) {
        let mut missing = self.missing.lock().unwrap_or_else(PoisonError::into_inner);
        if !missing.contains(&capability) {
            missing.push(capability);
        }
    }

    /// The answer to a call that failed after needing capabilities the client did not
    /// declare: `-32021` naming them (`requiredCapabilities: {"sampling": {}}`).
    pub(crate) fn missing_capabilities(&self) -> Option<ErrorData> {
        let missing = self.missing.lock().unwrap_or_else(PoisonError::into_inner);
        if missing.is_empty() {
            return None;
        }
        let required: serde_json::Map<String, Value> = missing
            .iter()
            .map(|c| ((*c).to_owned(), Value::Object(serde_json::Map::new())))
            .collect();
        let required = serde_json::from_value(Value::Object(required)).unwrap_or_default();
        Some(ErrorData::missing_required_client_capability(required))
    }

    /// The `input_required` answer, when the handler asked what this round could not answer.
    pub(crate) fn input_required(
        &self,
        seal: &StateSeal,
        binding: &Binding,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner));
        if asked.is_empty() {
            return Ok(None);
        }
        let sealed = Sealed {
            answers: self.answers.clone(),
            asked: asked.keys().cloned().collect(),
        };
        let options = SealOptions::new()
            .associated_data(&binding.0)
            .ttl(seal.lifetime);
        let state = seal.codec.seal_json_with(&sealed, &options).map_err(|e| {
            tracing::error!(error = %e, "a requestState could not be sealed");
            ErrorData::internal_error("the request state could not be sealed", None)
        })?;
        Ok(Some(InputRequiredResult::new(Some(asked), Some(state))))
    }
}
