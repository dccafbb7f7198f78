//! Not public API. Used by generated code.

#![allow(missing_docs, unreachable_pub)]

pub use ::inventory;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json;

pub use crate::Requirement;
pub use crate::ability::{AbilityDef, AbilityKind, CallFuture, InputDef, Output, PropertyDef};
pub use crate::extract::{
    ExtractorParam, FromContext, FromContextRef, Param, ValueParam, is_value,
};
pub use crate::schema::{input_schema_for, property_schema};
pub use crate::{AbilityError, Annotations, Context, Danger, Semantic};
pub use ::std::borrow::Cow;

use serde_json::{Map, Value};

use crate::ErrorCode;

/// A type that can be an ability parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an ability parameter",
    label = "needs `Deserialize` and `JsonSchema`",
    note = "derive `serde::Deserialize` and `schemars::JsonSchema` for it; borrowed types like `&str` cannot be parameters, use owned ones like `String`"
)]
pub trait AbilityInput: serde::de::DeserializeOwned + schemars::JsonSchema {}
impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> AbilityInput for T {}

/// A type that can be returned by an ability: its output schema, and how it becomes output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned by an ability",
    label = "needs `Serialize` and `JsonSchema`",
    note = "derive `serde::Serialize` and `schemars::JsonSchema` for it, or return `abilities::Rich<T>`, `abilities::Contents` or `abilities::Prompt`"
)]
pub trait AbilityOutput: Sized {
    /// The output schema, before the wire transformation; `None` for content-only results.
    fn output_schema() -> Option<schemars::Schema>;
    /// Turn the handler's value into output.
    fn into_output(self) -> Result<Output, AbilityError>;
}

impl<T: serde::Serialize + schemars::JsonSchema> AbilityOutput for T {
    fn output_schema() -> Option<schemars::Schema> {
        Some(crate::schema::output_schema_for::<T>())
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            structured: Some(encode(self)?),
            ..Output::default()
        })
    }
}

impl<T: serde::Serialize + schemars::JsonSchema> AbilityOutput for crate::Rich<T> {
    fn output_schema() -> Option<schemars::Schema> {
        Some(crate::schema::output_schema_for::<T>())
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            structured: Some(encode(self.structured)?),
            content: Some(self.content),
            ..Output::default()
        })
    }
}

impl AbilityOutput for crate::Contents {
    fn output_schema() -> Option<schemars::Schema> {
        None
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            content: Some(self.0),
            ..Output::default()
        })
    }
}

impl AbilityOutput for crate::Prompt {
    fn output_schema() -> Option<schemars::Schema> {
        None
    }
    fn into_output(self) -> Result<Output, AbilityError> {
        Ok(Output {
            content: Some(self.messages.iter().map(|m| m.content.clone()).collect()),
            prompt: Some(self),
            structured: None,
        })
    }
}

/// Turn a handler's return value into output.
pub fn into_output<T: AbilityOutput>(value: T) -> Result<Output, AbilityError> {
    value.into_output()
}

/// The output schema of `()` returns: none.
pub fn no_output_schema() -> Option<schemars::Schema> {
    None
}

/// An error type an ability may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error of an ability",
    label = "no conversion into `AbilityError`",
    note = "implement `From<{Self}> for abilities::AbilityError`"
)]
pub trait IntoAbilityError {
    fn into_ability_error(self) -> AbilityError;
}
impl<E: Into<AbilityError>> IntoAbilityError for E {
    fn into_ability_error(self) -> AbilityError {
        self.into()
    }
}

/// Deserialize validated arguments into the handler's input type.
///
/// Validation already ran, so a failure here is a constraint the schema could not express
/// (say `42.5` for an integer), still the caller's fault.
pub fn decode<T: AbilityInput>(value: Value) -> Result<T, AbilityError> {
    serde_json::from_value(value).map_err(|e| {
        AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("invalid arguments: {e}"),
        )
    })
}

/// Serialize a handler's output.
fn encode<T: serde::Serialize>(value: T) -> Result<Value, AbilityError> {
    serde_json::to_value(value).map_err(|e| {
        tracing::error!(error = %e, "ability output failed to serialize");
        AbilityError::internal("the ability's result could not be serialized")
    })
}

/// The validated arguments object (the normalizer guarantees an object).
pub fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Take one named parameter out of the arguments: as sent, else its default, else (for a type
/// that admits null, like `Option<T>`) null.
pub fn take_param<T: AbilityInput>(
    args: &mut Map<String, Value>,
    name: &str,
    default: Option<fn() -> T>,
) -> Result<T, AbilityError> {
    let value = match (args.remove(name), default) {
        (None, Some(default)) => return Ok(default()),
        (Some(value), _) => value,
        (None, None) => Value::Null,
    };
    serde_json::from_value(value).map_err(|e| {
        AbilityError::new(
            ErrorCode::ValidationInvalidType,
            format!("parameter '{name}' is invalid: {e}"),
        )
    })
}

/// Serialize a parameter default for the schema and the normalizer.
pub fn encode_default<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "parameter default failed to serialize");
        Value::Null
    })
}
