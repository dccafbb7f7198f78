//! The metrics link of the chain (feature `metrics`): every call counted by ability, surface
//! and outcome, and timed, however it ends.

use serde_json::Value;

use super::{Settle, Stage};
use crate::metrics::Metrics;
use crate::{Ability, AbilityError, Context};

impl Stage for Metrics {
    fn watch<'a>(
        &'a self,
        ability: &'a Ability,
        ctx: &Context,
        _args: &Value,
    ) -> Option<Settle<'a>> {
        let timer = self.start(&ability.metered, ability.name(), ctx.via());
        Some(Box::new(move |outcome| {
            timer.finish(outcome.map(drop).map_err(AbilityError::code));
        }))
    }
}
