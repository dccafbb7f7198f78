//! The strict schema profile's stage (OpenAI strict mode): `null` for an optional property
//! means "absent".

use crate::AbilityError;
use crate::pipeline::{Call, Stage};

/// The strict profile's stage among the arguments: `null` for a property the ability's own
/// schema makes optional and not nullable means "absent" (strict clients send every
/// property), at any depth of `properties` and `items`.
pub(crate) struct NullAsAbsent;

impl Stage for NullAsAbsent {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        crate::profile::strip_nulls(&mut call.args, call.ability.tool_input_schema());
        Ok(())
    }
}
