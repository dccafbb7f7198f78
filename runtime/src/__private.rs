//! Not public API. Used by generated code.

#![allow(missing_docs, unreachable_pub)]

pub use ::inventory;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json;
pub use ::std::borrow::Cow;

pub use crate::Requirement;
pub use crate::ability::{
    AbilityDef, AbilityKind, AbilityOutput, CallFuture, InputDef, IntoAbilityError, NotResult,
    Output, PropertyDef, Returned, no_output_schema,
};
pub use crate::extract::{
    AbilityInput, ExtractorParam, FromContext, FromContextRef, Param, ValueParam, encode_default,
    into_object,
};
pub use crate::{AbilityError, Annotations, Context, Danger, Semantic, TaskSupport};

/// Benchmarks only: what the pipeline does to count one successful call, alone.
#[cfg(feature = "metrics")]
pub use crate::metrics::Probe as MetricsProbe;
