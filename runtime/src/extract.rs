//! Extractors by trait: how each parameter of an `#[ability]` function is filled.
//!
//! Every parameter type goes through one trait, [`Param`], chosen by the type's impls and
//! never by its name (as axum's handlers pick `FromRequestParts`): types that are
//! `Deserialize + JsonSchema` are values taken from the arguments; types that implement
//! [`FromContext`] are extractors taken from the call's [`Context`]. `&Context` is borrowed
//! through [`FromContextRef`]. What an extractor needs from the server (a `State<T>`) is a
//! [`Requirement`], checked when the server is built.

use std::any::{TypeId, type_name};

use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::schema::{input_schema_for, property_schema};
use crate::{AbilityError, Context, ErrorCode, StateMap};

/// A handler parameter taken from the [`Context`] rather than from the arguments: implement
/// it for your own types (a database connection checked out per call, the caller's tenant...)
/// and take them as parameters of any ability.
///
/// ```standalone_crate
/// use abilities::{AbilityError, Caller, Context, extract::FromContext, Registry, ability};
/// use serde_json::json;
///
/// /// The calling principal, as an extractor.
/// struct Principal(String);
///
/// impl FromContext for Principal {
///     fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
///         Ok(Principal(ctx.caller().principal().to_owned()))
///     }
/// }
///
/// /// Greet the caller.
/// #[ability(semantic = "READ")]
/// fn greet(who: Principal, greeting: String) -> String {
///     format!("{greeting}, {}", who.0)
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = Context::new().with_caller(Caller::new("ada", ["x"]));
/// let out = Registry::collect().unwrap().call(ctx, "greet", json!({"greeting": "Hi"})).await;
/// assert_eq!(out.unwrap(), json!({"result": "Hi, ada"}));
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be taken from the call context",
    label = "not an extractor",
    note = "implement `abilities::extract::FromContext` for it"
)]
pub trait FromContext: Sized {
    /// What the server must provide for this extractor, checked by
    /// [`ServerBuilder::build`](crate::ServerBuilder::build) (default: nothing).
    fn requirement() -> Option<Requirement> {
        None
    }

    /// Take the value from the context, or explain why it is not there.
    fn from_context(ctx: &Context) -> Result<Self, AbilityError>;
}

impl FromContext for Context {
    fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
        Ok(ctx.clone())
    }
}

/// A parameter borrowed from the call context: `&Context`.
#[diagnostic::on_unimplemented(
    message = "`&{Self}` cannot be an ability parameter",
    label = "borrowed",
    note = "ability parameters are deserialized into owned values: use an owned type (`String`, not `&str`); only `&Context` is borrowed"
)]
pub trait FromContextRef {
    /// Borrow it.
    fn from_context_ref(ctx: &Context) -> &Self;
}

impl FromContextRef for Context {
    fn from_context_ref(ctx: &Context) -> &Self {
        ctx
    }
}

/// Something a server must be given for an ability to run: today, application state of one
/// type. A server whose abilities need what it was not given fails `build()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    type_id: TypeId,
    type_name: &'static str,
}

impl Requirement {
    /// Application state of type `T` ([`ServerBuilder::state`](crate::ServerBuilder::state)).
    pub fn state<T: Send + Sync + 'static>() -> Self {
        Self {
            type_id: TypeId::of::<T>(),
            type_name: type_name::<T>(),
        }
    }

    /// The Rust type required, as `std::any::type_name` spells it.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    pub(crate) fn met_by(&self, state: &StateMap) -> bool {
        state.contains(self.type_id)
    }
}

/// Chooses [`Param`]'s impl for values.
#[doc(hidden)]
pub struct ValueParam;

/// Chooses [`Param`]'s impl for extractors.
#[doc(hidden)]
pub struct ExtractorParam;

/// How the generated code fills one owned parameter. `M` is inferred: exactly one impl fits
/// a value type, another an extractor.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an ability parameter",
    label = "neither a value nor an extractor",
    note = "a value parameter needs `serde::Deserialize` and `schemars::JsonSchema` (derive both); an extractor implements `abilities::extract::FromContext`; borrowed types like `&str` cannot be parameters, use owned ones like `String`",
    note = "axum's `State` is not an extractor here: an ability takes `abilities::State<T>` (import axum's under another name)"
)]
pub trait Param<M>: Sized {
    /// Whether it is a value from the arguments (else an extractor).
    const VALUE: bool;
    /// Its property schema in an object input; `None` for extractors.
    fn schema(generator: &mut SchemaGenerator) -> Option<Schema>;
    /// Its schema as a flattened input; `None` for extractors.
    fn flat_schema() -> Option<Schema>;
    /// What the server must provide for it.
    fn requirement() -> Option<Requirement>;
    /// Take it from an object input (`name` and its default) or the context.
    fn take(
        ctx: &Context,
        args: &mut Map<String, Value>,
        name: &str,
        default: Option<fn() -> Self>,
    ) -> Result<Self, AbilityError>;
    /// Take it from a flattened input (the whole value, once) or the context.
    fn whole(ctx: &Context, input: &mut Option<Value>) -> Result<Self, AbilityError>;
}

impl<T: AbilityInput> Param<ValueParam> for T {
    const VALUE: bool = true;
    fn schema(generator: &mut SchemaGenerator) -> Option<Schema> {
        Some(property_schema::<T>(generator))
    }
    fn flat_schema() -> Option<Schema> {
        Some(input_schema_for::<T>())
    }
    fn requirement() -> Option<Requirement> {
        None
    }
    fn take(
        _ctx: &Context,
        args: &mut Map<String, Value>,
        name: &str,
        default: Option<fn() -> Self>,
    ) -> Result<Self, AbilityError> {
        take_param(args, name, default)
    }
    fn whole(_ctx: &Context, input: &mut Option<Value>) -> Result<Self, AbilityError> {
        decode(input.take().unwrap_or(Value::Null))
    }
}

impl<T: FromContext> Param<ExtractorParam> for T {
    const VALUE: bool = false;
    fn schema(_generator: &mut SchemaGenerator) -> Option<Schema> {
        None
    }
    fn flat_schema() -> Option<Schema> {
        None
    }
    fn requirement() -> Option<Requirement> {
        T::requirement()
    }
    fn take(
        ctx: &Context,
        _args: &mut Map<String, Value>,
        _name: &str,
        _default: Option<fn() -> Self>,
    ) -> Result<Self, AbilityError> {
        T::from_context(ctx)
    }
    fn whole(ctx: &Context, _input: &mut Option<Value>) -> Result<Self, AbilityError> {
        T::from_context(ctx)
    }
}

/// A type that can be an ability parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an ability parameter",
    label = "needs `Deserialize` and `JsonSchema`",
    note = "derive `serde::Deserialize` and `schemars::JsonSchema` for it; borrowed types like `&str` cannot be parameters, use owned ones like `String`"
)]
#[doc(hidden)]
pub trait AbilityInput: serde::de::DeserializeOwned + schemars::JsonSchema {}
impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> AbilityInput for T {}

/// Deserialize validated arguments into the handler's input type.
///
/// Validation already ran, so a failure here is a constraint the schema could not express
/// (say `42.5` for an integer), still the caller's fault.
pub(crate) fn decode<T: AbilityInput>(value: Value) -> Result<T, AbilityError> {
    read(value).map_err(|e| refused("", format!("invalid arguments: {e}")))
}

/// `value` as a `T`, the way validation judged it: JSON Schema counts `1.0` and `1e3` as
/// integers, so an integral number written as a float is read as the integer it is when the
/// type wants one. Arguments without such a number are read as they are.
fn read<T: AbilityInput>(mut value: Value) -> Result<T, serde_json::Error> {
    if holds_integral_float(&value) {
        // A type that takes the floats as they are (an `f64`, a `Value`) gets them so.
        if let Ok(read) = <T as serde::Deserialize>::deserialize(&value) {
            return Ok(read);
        }
        integral_floats_as_integers(&mut value);
    }
    serde_json::from_value(value)
}

/// The integer an integral number written as a float (`1.0`, `1e3`) is, when an i64 or a
/// u64 holds it exactly.
fn as_integer(number: &serde_json::Number) -> Option<Value> {
    let float = number
        .as_f64()
        .filter(|f| number.is_f64() && f.fract() == 0.0)?;
    // 2^63 and 2^64: the first floats past each type's range.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the range is checked first, and the float is integral"
    )]
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&float) {
        Some(Value::from(float as i64))
    } else if (0.0..18_446_744_073_709_551_616.0).contains(&float) {
        Some(Value::from(float as u64))
    } else {
        None
    }
}

fn holds_integral_float(value: &Value) -> bool {
    match value {
        Value::Number(number) => as_integer(number).is_some(),
        Value::Array(items) => items.iter().any(holds_integral_float),
        Value::Object(map) => map.values().any(holds_integral_float),
        _ => false,
    }
}

fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(integer) = as_integer(number) {
                *value = integer;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

/// The refusal of arguments the schema let through and the handler's types do not take,
/// with the one violation as `details.violations`, as validation reports them.
fn refused(pointer: &str, message: String) -> AbilityError {
    AbilityError::new(ErrorCode::ValidationInvalidType, message.clone()).with_details(
        serde_json::json!({"violations": [{
            "pointer": pointer,
            "code": ErrorCode::ValidationInvalidType.as_str(),
            "message": message,
        }]}),
    )
}

/// The validated arguments object (the normalizer guarantees an object).
#[doc(hidden)]
pub fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Take one named parameter out of the arguments: as sent, else its default, else (for a type
/// that admits null, like `Option<T>`) null.
pub(crate) fn take_param<T: AbilityInput>(
    args: &mut Map<String, Value>,
    name: &str,
    default: Option<fn() -> T>,
) -> Result<T, AbilityError> {
    let value = match (args.remove(name), default) {
        (None, Some(default)) => return Ok(default()),
        (Some(value), _) => value,
        (None, None) => Value::Null,
    };
    read(value).map_err(|e| {
        let pointer = format!("/{}", name.replace('~', "~0").replace('/', "~1"));
        refused(&pointer, format!("parameter '{name}' is invalid: {e}"))
    })
}

/// Serialize a parameter default for the schema and the normalizer.
#[doc(hidden)]
pub fn encode_default<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| {
        tracing::error!(error = %e, "parameter default failed to serialize");
        Value::Null
    })
}
