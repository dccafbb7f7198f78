//! The `jsonschema` crate's failures read as the built-in validator's (feature `jsonschema`),
//! for the schemas the built-in validator does not check.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::walk::{Failure, FailureKind};

/// Every failure of `args`, as [`Failure`]s.
pub(super) fn failures(validator: &jsonschema::Validator, args: &Value) -> Vec<Failure> {
    validator
        .iter_errors(args)
        .map(|error| {
            let at = error.instance_path().as_str().to_owned();
            let kind = match error.kind() {
                ValidationErrorKind::Required { property } => FailureKind::Required(
                    property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_owned),
                ),
                ValidationErrorKind::Type { kind } => FailureKind::Type(match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                }),
                other => FailureKind::Keyword {
                    keyword: other.keyword().to_owned().into(),
                    message: error.to_string(),
                },
            };
            Failure { at, kind }
        })
        .collect()
}
