//! One error taxonomy for every surface: upper-snake codes, a message and optional details.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

/// The machine-readable code of an [`AbilityError`], serialized in upper snake case.
///
/// Surfaces map codes to their own error channel (an `isError` tool result, a JSON-RPC
/// error, an MCP-AQL envelope); the code itself never changes on the way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A required parameter is absent.
    ValidationMissingParam,
    /// A parameter has the wrong JSON type (or the arguments are not an object).
    ValidationInvalidType,
    /// A parameter has the right type but breaks a constraint (enum, range, pattern, length...).
    ValidationInvalidValue,
    /// A parameter is not part of the ability's input (surfaces that reject extras).
    ValidationUnknownParam,
    /// A request, string, array or nesting depth is over a configured limit.
    ValidationPayloadTooLarge,
    /// An MCP-AQL UPDATE's `input` names a field the operation cannot change.
    ValidationUnknownField,
    /// An MCP-AQL operation was sent to another family's endpoint tool.
    ValidationEndpointMismatch,
    /// No MCP-AQL operation has the requested name.
    NotFoundOperation,
    /// An MCP-AQL `introspect` query names no known query type.
    InvalidQueryType,
    /// A confirmation token is not one the server issued.
    TokenInvalid,
    /// A confirmation token has expired.
    TokenExpired,
    /// A confirmation token was used already.
    TokenAlreadyUsed,
    /// A confirmation token was issued for another operation, parameters or session.
    TokenScopeMismatch,
    /// No ability has the requested name.
    NotFoundAbility,
    /// The thing the ability was asked about does not exist.
    NotFoundResource,
    /// The caller lacks the scope the ability requires.
    PermissionDenied,
    /// The request named another site than the one this server serves.
    SiteMismatch,
    /// The operation needs an explicit confirmation before it runs.
    ConfirmationRequired,
    /// The resource already exists.
    ConflictAlreadyExists,
    /// The ability ran and reported a failure of its own.
    ExecutionFailed,
    /// The call took longer than its time limit.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
    /// The ability needs something of the client (elicitation, sampling) that it did not
    /// declare.
    ClientCapabilityMissing,
    /// Something went wrong inside the server (a panic, a serialization failure...).
    InternalError,
    /// The handler asked the client something this round has no answer to (protocol
    /// 2026-07-28): the call answers `input_required` and runs again with the answer.
    InputRequired,
    /// The caller holds as many of something as it may (confirmation tokens outstanding):
    /// spend or let some expire first.
    LimitExceeded,
    /// An idempotency key was used before for another operation or other arguments.
    IdempotencyConflict,
    /// A call with this idempotency key started and has not finished: it still runs, or
    /// its server stopped before it could say whether it took effect.
    IdempotencyInProgress,
    /// A call with this idempotency key started on a server that stopped (its claim's lease
    /// ran out) before it recorded the outcome: whether it took effect is unknown. Read the
    /// state, then use a new key.
    IdempotencyOutcomeUnknown,
    /// A server this one forwards to (a bridged upstream) is not running or stopped
    /// answering; the details name it and say why.
    UpstreamUnavailable,
    /// The caller called this ability more often than its rate allows; `details.retry_after`
    /// says in how many seconds a call is allowed again.
    RateLimited,
    /// A code defined by the application, in upper snake case.
    Custom(Cow<'static, str>),
}

impl ErrorCode {
    /// The wire form of the code, e.g. `VALIDATION_MISSING_PARAM`.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ValidationMissingParam => "VALIDATION_MISSING_PARAM",
            Self::ValidationInvalidType => "VALIDATION_INVALID_TYPE",
            Self::ValidationInvalidValue => "VALIDATION_INVALID_VALUE",
            Self::ValidationUnknownParam => "VALIDATION_UNKNOWN_PARAM",
            Self::ValidationPayloadTooLarge => "VALIDATION_PAYLOAD_TOO_LARGE",
            Self::ValidationUnknownField => "VALIDATION_UNKNOWN_FIELD",
            Self::ValidationEndpointMismatch => "VALIDATION_ENDPOINT_MISMATCH",
            Self::NotFoundOperation => "NOT_FOUND_OPERATION",
            Self::InvalidQueryType => "INVALID_QUERY_TYPE",
            Self::TokenInvalid => "TOKEN_INVALID",
            Self::TokenExpired => "TOKEN_EXPIRED",
            Self::TokenAlreadyUsed => "TOKEN_ALREADY_USED",
            Self::TokenScopeMismatch => "TOKEN_SCOPE_MISMATCH",
            Self::NotFoundAbility => "NOT_FOUND_ABILITY",
            Self::NotFoundResource => "NOT_FOUND_RESOURCE",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::SiteMismatch => "SITE_MISMATCH",
            Self::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            Self::ConflictAlreadyExists => "CONFLICT_ALREADY_EXISTS",
            Self::ExecutionFailed => "EXECUTION_FAILED",
            Self::Timeout => "TIMEOUT",
            Self::Cancelled => "CANCELLED",
            Self::ClientCapabilityMissing => "CLIENT_CAPABILITY_MISSING",
            Self::InputRequired => "INPUT_REQUIRED",
            Self::InternalError => "INTERNAL_ERROR",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            Self::IdempotencyInProgress => "IDEMPOTENCY_IN_PROGRESS",
            Self::IdempotencyOutcomeUnknown => "IDEMPOTENCY_OUTCOME_UNKNOWN",
            Self::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            Self::RateLimited => "RATE_LIMITED",
            Self::Custom(code) => code,
        }
    }

    /// Every framework code, for [`canonical`](Self::canonical).
    pub(crate) const FRAMEWORK: [ErrorCode; 31] = [
        Self::ValidationMissingParam,
        Self::ValidationInvalidType,
        Self::ValidationInvalidValue,
        Self::ValidationUnknownParam,
        Self::ValidationPayloadTooLarge,
        Self::ValidationUnknownField,
        Self::ValidationEndpointMismatch,
        Self::NotFoundOperation,
        Self::InvalidQueryType,
        Self::TokenInvalid,
        Self::TokenExpired,
        Self::TokenAlreadyUsed,
        Self::TokenScopeMismatch,
        Self::NotFoundAbility,
        Self::NotFoundResource,
        Self::PermissionDenied,
        Self::SiteMismatch,
        Self::ConfirmationRequired,
        Self::ConflictAlreadyExists,
        Self::ExecutionFailed,
        Self::Timeout,
        Self::Cancelled,
        Self::ClientCapabilityMissing,
        Self::InternalError,
        Self::InputRequired,
        Self::LimitExceeded,
        Self::IdempotencyConflict,
        Self::IdempotencyInProgress,
        Self::IdempotencyOutcomeUnknown,
        Self::UpstreamUnavailable,
        Self::RateLimited,
    ];

    /// A `Custom` code that spells a framework code is that code, so an application's
    /// `Custom("TIMEOUT")` means what `Timeout` means on every surface.
    pub fn canonical(self) -> Self {
        match &self {
            Self::Custom(code) => Self::FRAMEWORK
                .iter()
                .find(|known| known.as_str() == code.as_ref())
                .cloned()
                .unwrap_or(self),
            _ => self,
        }
    }

    /// Whether the code reports a problem with the caller's arguments.
    pub fn is_validation(&self) -> bool {
        match self {
            Self::ValidationMissingParam
            | Self::ValidationInvalidType
            | Self::ValidationInvalidValue
            | Self::ValidationUnknownParam
            | Self::ValidationPayloadTooLarge
            | Self::ValidationUnknownField
            | Self::ValidationEndpointMismatch => true,
            Self::Custom(code) => code.starts_with("VALIDATION_"),
            _ => false,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The error of an ability call: what a client sees as `{code, message, details?}`.
///
/// Handlers return it directly or through `From`: any `E` with
/// `impl From<E> for AbilityError` can be the error type of an ability.
///
/// ```
/// use abilities::AbilityError;
///
/// let err = AbilityError::not_found("post 7 does not exist")
///     .with_details(serde_json::json!({ "resource_id": 7 }));
/// assert_eq!(
///     serde_json::to_value(&err).unwrap(),
///     serde_json::json!({
///         "code": "NOT_FOUND_RESOURCE",
///         "message": "post 7 does not exist",
///         "details": { "resource_id": 7 }
///     })
/// );
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct AbilityError {
    code: ErrorCode,
    message: String,
    /// Boxed: an error travels in every call's `Result`, and most have no details.
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Box<Value>>,
    /// The confirmation a refused call offers, for the surface that shows it.
    #[serde(skip)]
    confirmation: Option<Box<Confirmation>>,
}

/// A confirmation a call refused with `CONFIRMATION_REQUIRED` offers: retry with `token`
/// before `expires_at` (MCP-AQL's confirmation gate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Confirmation {
    pub(crate) token: String,
    /// ISO 8601 UTC time.
    pub(crate) expires_at: String,
    /// What the user is asked to confirm.
    pub(crate) message: String,
}

/// An error as its wire form writes it: `{code, message, details?}`.
impl<'de> serde::Deserialize<'de> for AbilityError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Wire {
            code: String,
            message: String,
            #[serde(default)]
            details: Option<Value>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let error = Self::new(ErrorCode::Custom(wire.code.into()), wire.message);
        Ok(match wire.details {
            Some(details) => error.with_details(details),
            None => error,
        })
    }
}

impl AbilityError {
    /// An error with a code and a message for the caller.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.canonical(),
            message: message.into(),
            details: None,
            confirmation: None,
        }
    }

    /// Offer `confirmation` with this (`CONFIRMATION_REQUIRED`) refusal.
    #[must_use]
    pub(crate) fn with_confirmation(mut self, confirmation: Confirmation) -> Self {
        self.confirmation = Some(Box::new(confirmation));
        self
    }

    /// The confirmation this refusal offers, if any.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn confirmation(&self) -> Option<&Confirmation> {
        self.confirmation.as_deref()
    }

    /// Attach structured details (shown to the caller beside the message).
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// `NOT_FOUND_RESOURCE`: the thing asked about does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFoundResource, message)
    }

    /// `VALIDATION_INVALID_VALUE`: an argument passed the schema but is still unacceptable.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationInvalidValue, message)
    }

    /// `PERMISSION_DENIED`.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PermissionDenied, message)
    }

    /// `CONFLICT_ALREADY_EXISTS`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ConflictAlreadyExists, message)
    }

    /// `EXECUTION_FAILED`: the ability ran and failed for a reason the caller may read.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ExecutionFailed, message)
    }

    /// `INTERNAL_ERROR`: the server failed; the message must not leak internals.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// The error's code.
    pub fn code(&self) -> &ErrorCode {
        &self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Structured details, if any.
    pub fn details(&self) -> Option<&Value> {
        self.details.as_deref()
    }
}

/// What a name was looked up as, for [`AbilityError::unknown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// An ability name (in process, meta tools).
    Ability,
    /// A tool name (`tools/call`).
    Tool,
    /// A prompt name (`prompts/get`).
    Prompt,
}

impl AbilityError {
    /// `NOT_FOUND_ABILITY` for `name`, cut to a readable length: the one way this error is
    /// made, with one shape (`details: {name}`) wherever it travels.
    pub(crate) fn unknown(lookup: Lookup, name: &str) -> Self {
        let shown: String = name.chars().take(100).collect();
        let message = match lookup {
            Lookup::Ability => format!("no ability named '{shown}'"),
            Lookup::Tool => format!("unknown tool: {shown}"),
            Lookup::Prompt => format!("unknown prompt: {shown}"),
        };
        Self::new(ErrorCode::NotFoundAbility, message)
            .with_details(serde_json::json!({ "name": shown }))
    }
}

impl From<String> for AbilityError {
    /// A plain message from a handler becomes `EXECUTION_FAILED`.
    fn from(message: String) -> Self {
        Self::failed(message)
    }
}

impl From<&str> for AbilityError {
    /// A plain message from a handler becomes `EXECUTION_FAILED`.
    fn from(message: &str) -> Self {
        Self::failed(message)
    }
}

impl From<std::convert::Infallible> for AbilityError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

/// Why a [`Registry`](crate::Registry) could not be built. Each variant names the definitions
/// involved by `file:line`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two abilities share a name.
    #[error("duplicate ability name `{name}`: defined at {first} and at {second}")]
    DuplicateAbility {
        /// The shared ability name.
        name: String,
        /// Where the first definition is.
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// Two different ability names map to the same MCP tool name.
    #[error(
        "abilities `{first_name}` ({first}) and `{second_name}` ({second}) both map to the tool name `{tool}`"
    )]
    ToolNameCollision {
        /// The colliding tool name.
        tool: String,
        /// The first ability's name.
        first_name: String,
        /// Where the first definition is.
        first: String,
        /// The second ability's name.
        second_name: String,
        /// Where the second definition is.
        second: String,
    },
    /// An ability name yields no valid tool name.
    #[error(
        "ability name `{name}` ({at}) is invalid: use up to 128 of `A-Z a-z 0-9 _ - .`, optionally as `namespace/name`"
    )]
    InvalidName {
        /// The offending name.
        name: String,
        /// Where it is defined.
        at: String,
    },
    /// A derived schema could not be compiled into a validator.
    #[error("the input schema of `{name}` ({at}) does not compile: {reason}")]
    InvalidSchema {
        /// The ability's name.
        name: String,
        /// Where it is defined.
        at: String,
        /// What the validator reported.
        reason: String,
    },
    /// A resource ability's URI is no URI template.
    #[error("ability `{name}` ({at}) serves `{uri}`, which is no URI template: {reason}")]
    InvalidUri {
        /// The ability's name.
        name: String,
        /// Where it is defined.
        at: String,
        /// The URI.
        uri: String,
        /// Why not.
        reason: String,
    },
    /// An ability built at run time lacks something it needs.
    #[error("ability `{name}` ({at}) has no {missing}")]
    Incomplete {
        /// The ability's name.
        name: String,
        /// Where it was built.
        at: String,
        /// What is missing (`description`, `handler`).
        missing: &'static str,
    },
    /// An ability built at run time combines what cannot go together (a resource or prompt
    /// that would run as a background task).
    #[error("ability `{name}` ({at}): {problem}")]
    Conflict {
        /// The ability's name.
        name: String,
        /// Where it was built.
        at: String,
        /// What does not go together.
        problem: &'static str,
    },
    /// Two resource abilities share a URI (or URI template).
    #[error("abilities {first} and {second} both serve the resource `{uri}`")]
    DuplicateResource {
        /// The shared URI.
        uri: String,
        /// The first ability, as `` `name` (file:line) ``.
        first: String,
        /// The second ability, likewise.
        second: String,
    },
}
