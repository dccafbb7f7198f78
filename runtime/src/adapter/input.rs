//! Multi-round input (protocol 2026-07-28): a handler that asks the client something
//! ([`Context::elicit`](crate::Context::elicit), `sample`, `list_roots`) cannot send a request
//! back on that protocol. Instead the call answers `resultType: "input_required"` with the
//! questions and a sealed `requestState`; the client retries with `inputResponses`, and the
//! handler runs again from the start, this time finding its answers.
//!
//! Questions are keyed by the handler ([`Context::ask`](crate::Context::ask)) or by the order
//! it asks them (`elicitation-0`, `sampling-1`...), so a handler that asks the same questions
//! in the same order on every run gets each answer where it asked. Answers of earlier rounds
//! travel in the state, each with a digest of the question it answers, sealed with the
//! server's key (HMAC-SHA256), bound to the caller and to the request (method, name,
//! arguments) and valid for a lifetime: a tampered, expired or foreign state is refused, and
//! an answer is never handed to a question other than the one it answered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ErrorData, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, SealOptions,
};
use rmcp::service::RequestContext;
use serde::Deserialize as _;
use serde_json::Value;

use super::McpHandler;
use crate::question::Question;
use crate::seal::StateSeal;
use crate::server::Inner;
use crate::{AbilityError, Context, ErrorCode};

/// The largest `requestState` the server hands out: answers past it are refused.
pub(crate) const MAX_STATE_BYTES: usize = 256 * 1024;
/// The one answer to a `requestState` that does not verify, whatever is wrong with it
/// (tampered, expired, another request's or caller's): the details go to the log only.
pub(crate) const REFUSED_STATE: &str = "requestState is not valid for this request";

/// What a request is, for binding its state: who sent it, the method, what it names and
/// its arguments, each part length-prefixed.
pub(crate) struct Binding(Vec<u8>);

impl Binding {
    fn new(principal: &str, method: &str, name: &str, arguments: &Value) -> Self {
        let mut data = Vec::with_capacity(principal.len() + method.len() + name.len() + 56);
        for part in [principal.as_bytes(), method.as_bytes(), name.as_bytes()] {
            data.extend_from_slice(&(part.len() as u64).to_be_bytes());
            data.extend_from_slice(part);
        }
        data.extend_from_slice(&crate::digest::canonical(arguments));
        Self(data)
    }
}

/// An answer, with the digest of the question it answers (none for a first round's answers,
/// which came without a state).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Answer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    question: Option<String>,
    value: Value,
    /// What names this answer for as long as it travels from state to state: a digest of the
    /// state it came back with and its key. What must happen once per answer (a
    /// confirmation) is spent against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

/// The sealed payload: every answer the client gave in earlier rounds, and the questions the
/// last round asked (the only ones a retry may answer), by key, as digests.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    answers: BTreeMap<String, Answer>,
    asked: BTreeMap<String, String>,
}

/// One call's rounds: the answers it has and the questions it asked without one.
pub(crate) struct Rounds {
    answers: BTreeMap<String, Answer>,
    /// The keys whose answers the handler took this round: the only answers sealed again.
    taken: Mutex<std::collections::BTreeSet<String>>,
    /// The id of the answer (sealed, or sent up front) last handed to the handler.
    last_sealed: Mutex<Option<String>>,
    /// The state this round came with (a digest), which tells its rounds apart.
    state: Option<String>,
    asked: Mutex<BTreeMap<String, Question>>,
    /// The capabilities the handler needed and the client did not declare.
    missing: Mutex<Vec<Needed>>,
}

impl Rounds {
    /// The rounds of a request: the answers sealed in `state` (verified against `binding`)
    /// and those this retry brings to the questions the state says were asked (others are
    /// ignored). Without a state, the answers are to the call's first questions (a client
    /// may answer up front); only those the handler takes are sealed on. A state that does
    /// not verify is refused with `-32602` and one message, whatever is wrong with it.
    fn open(
        seal: &StateSeal,
        binding: &Binding,
        state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<Self, ErrorData> {
        let Some(state) = state else {
            // Named by the request they came with and their key: the same answers sent again
            // with the same request are the same answers.
            let request = crate::digest::hex(&crate::digest::canonical(&Value::from(
                crate::digest::hex(&binding.0),
            )));
            let answers = responses
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| {
                    let id = crate::digest::canonical(&serde_json::json!([request, key, value]));
                    let answer = Answer {
                        question: None,
                        value,
                        id: Some(crate::digest::hex(&id)),
                    };
                    (key, answer)
                })
                .collect();
            return Ok(Self::new(answers));
        };
        let sealed: Sealed = seal
            .codec()
            .open_json_with(state, &binding.0)
            .map_err(|e| {
                tracing::debug!(error = %e, "a requestState was refused");
                ErrorData::invalid_params(REFUSED_STATE, None)
            })?;
        let responses = responses.unwrap_or_default();
        let mut answers = sealed.answers;
        let mut responses = responses;
        for (key, question) in sealed.asked {
            if let Some(value) = responses.remove(&key) {
                let id = crate::digest::canonical(&serde_json::json!([state, key]));
                answers.insert(
                    key,
                    Answer {
                        question: Some(question),
                        value,
                        id: Some(crate::digest::hex(&id)),
                    },
                );
            }
        }
        let mut rounds = Self::new(answers);
        rounds.state = Some(crate::digest::hex(&crate::digest::canonical(&Value::from(
            state,
        ))));
        Ok(rounds)
    }

    fn new(answers: BTreeMap<String, Answer>) -> Self {
        Self {
            answers,
            taken: Mutex::new(std::collections::BTreeSet::new()),
            last_sealed: Mutex::new(None),
            state: None,
            asked: Mutex::new(BTreeMap::new()),
            missing: Mutex::new(Vec::new()),
        }
    }

    /// Ask `question` under `key`: the client's answer when this round has one to that very
    /// question, shaped as its result; else the question is kept for the `input_required`
    /// answer and the handler stops with `INPUT_REQUIRED`.
    pub(crate) fn ask(&self, key: String, question: Question) -> Result<Value, AbilityError> {
        let answer = self.answers.get(&key).filter(|a| {
            a.question.as_ref().is_none_or(|d| *d == question.digest())
                && question.answered_by(&a.value)
        });
        if let Some(answer) = answer {
            self.taken
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key);
            // Named with the round it is handed out in: a later round of the same call (the
            // handler asked again after it) hands it out under another name, a replay of
            // any round under the same.
            let named = answer.id.as_ref().map(|id| match &self.state {
                Some(state) => format!("{id}.{state}"),
                None => id.clone(),
            });
            *self
                .last_sealed
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = named;
            return Ok(answer.value.clone());
        }
        let method = question.method().to_owned();
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, question);
        Err(AbilityError::new(
            ErrorCode::InputRequired,
            format!("waiting for the client's answer to {method}"),
        ))
    }

    /// The name of the sealed answer last handed to the handler, in this round: every retry
    /// of this round (the same state again) hands it out under the same name; a later round
    /// of the same call, under its own.
    pub(crate) fn last_sealed(&self) -> Option<String> {
        self.last_sealed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The handler needed `capability` (`elicitation`, `sampling`, `roots`), which the
    /// client did not declare.
    pub(crate) fn missing(&self, capability: Needed) {
        let mut missing = self.missing.lock().unwrap_or_else(PoisonError::into_inner);
        if !missing.contains(&capability) {
            missing.push(capability);
        }
    }

    /// The answer to a call that failed after needing capabilities the client did not
    /// declare: `-32021` naming them (`requiredCapabilities: {"sampling": {}}`).
    fn missing_capabilities(&self) -> Option<ErrorData> {
        let missing = self.missing.lock().unwrap_or_else(PoisonError::into_inner);
        if missing.is_empty() {
            return None;
        }
        let mut required = ClientCapabilities::default();
        for capability in missing.iter() {
            capability.require(&mut required);
        }
        let mut error = ErrorData::missing_required_client_capability(required);
        // Say so of a feature this protocol version deprecates (SEP-2577).
        for capability in missing.iter() {
            if let Some(instead) = capability.deprecated() {
                error.message = format!(
                    "{}; {} is deprecated in protocol 2026-07-28 (SEP-2577): {instead}",
                    error.message,
                    capability.name()
                )
                .into();
            }
        }
        Some(error)
    }

    /// The `input_required` answer, when the handler asked what this round could not answer.
    fn input_required(
        &self,
        seal: &StateSeal,
        binding: &Binding,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner));
        if asked.is_empty() {
            return Ok(None);
        }
        // Only the answers the handler took travel on: whatever else came is dropped.
        let taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        let answers = self
            .answers
            .iter()
            .filter(|(key, _)| taken.contains(*key))
            .map(|(key, answer)| (key.clone(), answer.clone()))
            .collect();
        drop(taken);
        let sealed = Sealed {
            answers,
            asked: asked
                .iter()
                .map(|(key, q)| (key.clone(), q.digest().to_owned()))
                .collect(),
        };
        let options = SealOptions::new()
            .associated_data(&binding.0)
            .ttl(seal.lifetime());
        let state = seal
            .codec()
            .seal_json_with(&sealed, &options)
            .map_err(|e| {
                tracing::error!(error = %e, "a requestState could not be sealed");
                ErrorData::internal_error("the request state could not be sealed", None)
            })?;
        if state.len() > MAX_STATE_BYTES {
            return Err(ErrorData::invalid_params(
                format!(
                    "the answers given so far make a requestState of {} bytes, more than the \
                     {MAX_STATE_BYTES} this server hands out",
                    state.len()
                ),
                None,
            ));
        }
        let mut requests = InputRequests::new();
        for (key, question) in asked {
            match InputRequest::deserialize(question.request) {
                Ok(request) => {
                    requests.insert(key, request);
                }
                Err(e) => {
                    tracing::error!(error = %e, "a checked question did not convert");
                    return Err(ErrorData::internal_error(
                        "a question did not convert",
                        None,
                    ));
                }
            }
        }
        Ok(Some(InputRequiredResult::new(Some(requests), Some(state))))
    }
}

/// Where a call that runs on as a background task finds its task, once it is one.
pub(super) type Detach = Arc<crate::task::Slot>;

/// What a request that may ask for input is, to bind its rounds to.
pub(super) struct Asked<'a> {
    pub(super) method: &'a str,
    pub(super) name: &'a str,
    pub(super) arguments: &'a Value,
    pub(super) state: Option<&'a str>,
    pub(super) responses: Option<InputResponses>,
}

impl<'a> Asked<'a> {
    /// A `tools/call` with these arguments, its answers taken from the request.
    pub(super) fn tool_call(
        request: &'a mut rmcp::model::CallToolRequestParams,
        arguments: &'a Value,
    ) -> Self {
        let responses = request.input_responses.take();
        Self {
            method: "tools/call",
            name: &request.name,
            arguments,
            state: request.request_state.as_deref(),
            responses,
        }
    }
}

/// A multi-round call's rounds and what they are bound to.
pub(super) struct Pending {
    rounds: Arc<Rounds>,
    binding: Binding,
}

impl Pending {
    /// What a multi-round call answers instead of its own result: `input_required` when the
    /// handler asked what this round could not answer; `-32021` when it `failed` after
    /// needing a capability the client did not declare.
    pub(super) fn answer(
        pending: Option<&Pending>,
        inner: &Inner,
        failed: bool,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        let Some(p) = pending else {
            return Ok(None);
        };
        if let Some(input) = p.rounds.input_required(&inner.seal, &p.binding)? {
            return Ok(Some(input));
        }
        match p.rounds.missing_capabilities() {
            Some(missing) if failed => Err(missing),
            _ => Ok(None),
        }
    }
}

impl McpHandler {
    /// The context of a call that may ask the client for input: on protocol versions
    /// without server-to-client requests (2026-07-28), with its rounds, whose state must
    /// verify.
    pub(super) fn asking_context(
        &self,
        request: RequestContext<RoleServer>,
        asked: Asked<'_>,
        task: Option<Detach>,
    ) -> Result<(Context, Option<Pending>), ErrorData> {
        let caller = self.caller(&request);
        if !super::client::is_stateless(&request) {
            return Ok((self.context_as(caller, request, None, task), None));
        }
        let binding = Binding::new(
            caller.principal(),
            asked.method,
            asked.name,
            asked.arguments,
        );
        let continues = asked.state.is_some();
        let rounds = Arc::new(Rounds::open(
            &self.inner.seal,
            &binding,
            asked.state,
            asked.responses,
        )?);
        let mut context = self.context_as(caller, request, Some(Arc::clone(&rounds)), task);
        if continues {
            // A verified state: this round goes on with a call already counted.
            context = context.continuing();
        }
        Ok((context, Some(Pending { rounds, binding })))
    }
}

/// A client capability a question needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Needed {
    Elicitation,
    Sampling,
    Roots,
}

impl Needed {
    /// Its name in the client's capabilities.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    /// What replaces it, for a feature protocol 2026-07-28 deprecates (SEP-2577).
    pub(crate) fn deprecated(self) -> Option<&'static str> {
        match self {
            Self::Elicitation => None,
            Self::Sampling => Some("call a model provider from the server instead"),
            Self::Roots => Some(
                "take what the roots would say as a parameter, a resource URI or the server's \
                 configuration instead",
            ),
        }
    }

    /// Mark it in `required`.
    fn require(self, required: &mut ClientCapabilities) {
        match self {
            Self::Elicitation => required.elicitation = Some(Default::default()),
            Self::Sampling => required.sampling = Some(Default::default()),
            Self::Roots => required.roots = Some(Default::default()),
        }
    }
}
