//! Argument validation against the compiled wire schema, reporting every violation with its
//! JSON pointer.
//!
//! The built-in validator ([`schema`], [`walk`]) checks JSON Schema 2020-12 as Rust types
//! derive it and as people write it by hand; a schema with a keyword it does not check is
//! refused when the registry is built, unless the `jsonschema` feature is on, which then
//! checks that schema with the `jsonschema` crate ([`full`]).

#[cfg(test)]
mod derived;
mod evaluated;
#[cfg(feature = "jsonschema")]
mod full;
mod keyword;
mod pattern;
mod schema;
#[cfg(test)]
mod suite;
#[cfg(test)]
mod tests;
mod value;
mod walk;

use serde_json::{Value, json};

use crate::{AbilityError, ErrorCode};
use keyword::Compiled;
use schema::Problem;
use walk::{Failure, FailureKind};

/// Messages quote the offending value; a huge value is cut to this many characters.
const MAX_QUOTED: usize = 120;

/// A compiled input schema.
#[derive(Debug)]
pub(crate) enum Validator {
    /// The built-in validator.
    Builtin(Compiled),
    /// A schema with keywords only the `jsonschema` crate checks.
    #[cfg(feature = "jsonschema")]
    Full(Box<jsonschema::Validator>),
}

impl Validator {
    /// Compile `schema`, or say why it cannot be checked.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        match Compiled::new(schema) {
            Ok(compiled) => Ok(Self::Builtin(compiled)),
            Err(Problem::Invalid(reason)) => Err(reason),
            #[cfg(feature = "jsonschema")]
            Err(Problem::Unsupported(what)) => jsonschema::draft202012::new(schema)
                .map(|v| Self::Full(Box::new(v)))
                .map_err(|e| format!("{e} (and the built-in validator does not check {what})")),
            #[cfg(not(feature = "jsonschema"))]
            Err(Problem::Unsupported(what)) => Err(unsupported(&what)),
        }
    }

    fn is_valid(&self, args: &Value) -> bool {
        match self {
            Self::Builtin(compiled) => compiled.is_valid(args),
            #[cfg(feature = "jsonschema")]
            Self::Full(validator) => validator.is_valid(args),
        }
    }

    fn failures(&self, args: &Value) -> Vec<Failure> {
        match self {
            Self::Builtin(compiled) => compiled.failures(args),
            #[cfg(feature = "jsonschema")]
            Self::Full(validator) => full::failures(validator, args),
        }
    }
}

/// Why a schema the built-in validator does not check is refused.
#[cfg_attr(feature = "jsonschema", allow(dead_code))]
fn unsupported(what: &str) -> String {
    format!(
        "the built-in validator does not check {what}; turn on the `jsonschema` feature of \
         `abilities` to check every keyword of JSON Schema 2020-12"
    )
}

/// Validate `args`; on failure the error's code is the most telling violation's
/// (a missing parameter, then a wrong type, then a broken constraint) and
/// `details.violations` lists all of them as `{pointer, code, message}`. A violation inside
/// one of the `sensitive` top-level arguments names the keyword it broke, never the value.
pub(crate) fn check(
    validator: &Validator,
    args: &Value,
    sensitive: &[std::borrow::Cow<'static, str>],
) -> Result<(), AbilityError> {
    if validator.is_valid(args) {
        return Ok(());
    }
    let mut violations: Vec<Violation> = validator
        .failures(args)
        .into_iter()
        .map(|failure| Violation::from_failure(failure, args, sensitive))
        .collect();
    if violations.is_empty() {
        // The schema said no without saying why: refuse rather than let it through.
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidValue,
            "the arguments do not match the input schema",
        ));
    }
    violations.sort_by_key(|v| v.rank);
    let first = &violations[0];
    let message = match violations.len() {
        1 => first.message.clone(),
        n => format!(
            "{n} invalid arguments: {}",
            violations
                .iter()
                .map(|v| v.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    let details = json!({
        "violations": violations.iter().map(|v| json!({
            "pointer": v.pointer,
            "code": v.code.as_str(),
            "message": v.message,
        })).collect::<Vec<_>>()
    });
    Err(AbilityError::new(first.code.clone(), message).with_details(details))
}

struct Violation {
    pointer: String,
    code: ErrorCode,
    message: String,
    rank: u8,
}

impl Violation {
    fn from_failure(
        failure: Failure,
        args: &Value,
        sensitive: &[std::borrow::Cow<'static, str>],
    ) -> Self {
        let at = failure.at;
        let secret = sensitive.iter().any(|name| {
            if name.is_empty() {
                // The whole input is sensitive.
                return true;
            }
            let escaped = name.replace('~', "~0").replace('/', "~1");
            at.strip_prefix('/')
                .and_then(|rest| rest.strip_prefix(escaped.as_str()))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        match failure.kind {
            FailureKind::Required(name) => {
                let pointer = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                Self {
                    message: format!("missing required parameter '{}'", display_pointer(&pointer)),
                    pointer,
                    code: ErrorCode::ValidationMissingParam,
                    rank: 0,
                }
            }
            FailureKind::Type(expected) => {
                let got = args
                    .pointer(&at)
                    .map_or("nothing", crate::normalize::json_type);
                Self {
                    message: format!(
                        "parameter '{}' must be {expected}, got {got}",
                        display_pointer(&at),
                    ),
                    pointer: at,
                    code: ErrorCode::ValidationInvalidType,
                    rank: 1,
                }
            }
            FailureKind::Keyword { keyword, .. } if secret => Self {
                message: format!(
                    "parameter '{}' is invalid: it does not satisfy `{keyword}` (the value is sensitive and not shown)",
                    display_pointer(&at),
                ),
                pointer: at,
                code: ErrorCode::ValidationInvalidValue,
                rank: 2,
            },
            FailureKind::Keyword { message, .. } => {
                let mut what = message;
                if what.chars().count() > MAX_QUOTED {
                    what = what.chars().take(MAX_QUOTED).collect::<String>() + "...";
                }
                Self {
                    message: format!("parameter '{}' is invalid: {what}", display_pointer(&at)),
                    pointer: at,
                    code: ErrorCode::ValidationInvalidValue,
                    rank: 2,
                }
            }
        }
    }
}

/// `/input/tags/0` reads as `input.tags.0`; the root as `(arguments)`.
fn display_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        return "(arguments)".to_owned();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}
