//! Argument validation against the compiled wire schema, reporting every violation with its
//! JSON pointer.

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::{Value, json};

use crate::{AbilityError, ErrorCode};

/// Messages quote the offending value; a huge value is cut to this many characters.
const MAX_QUOTED: usize = 120;

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
        .iter_errors(args)
        .map(|error| Violation::from_error(error, sensitive))
        .collect();
    if violations.is_empty() {
        return Ok(());
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
    fn from_error(
        error: ValidationError<'_>,
        sensitive: &[std::borrow::Cow<'static, str>],
    ) -> Self {
        let at = error.instance_path().as_str().to_owned();
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
        match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned);
                let pointer = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                Self {
                    message: format!("missing required parameter '{}'", display_pointer(&pointer)),
                    pointer,
                    code: ErrorCode::ValidationMissingParam,
                    rank: 0,
                }
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    jsonschema::error::TypeKind::Single(t) => t.to_string(),
                    jsonschema::error::TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                Self {
                    message: format!(
                        "parameter '{}' must be {expected}, got {}",
                        display_pointer(&at),
                        crate::normalize::json_type(error.instance())
                    ),
                    pointer: at,
                    code: ErrorCode::ValidationInvalidType,
                    rank: 1,
                }
            }
            _ if secret => Self {
                message: format!(
                    "parameter '{}' is invalid: it does not satisfy `{}` (the value is sensitive and not shown)",
                    display_pointer(&at),
                    error.kind().keyword()
                ),
                pointer: at,
                code: ErrorCode::ValidationInvalidValue,
                rank: 2,
            },
            _ => {
                let mut what = error.to_string();
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
