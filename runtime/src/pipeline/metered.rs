//! The metrics link of the chain (feature `metrics`): every call counted by ability, surface
//! and outcome, and timed, however it ends.

use std::sync::Arc;

use super::Stage;
use crate::instruments::Instruments;

/// The metrics link's stage, when the server counts calls.
pub(super) fn stage(instruments: &Instruments) -> Option<Arc<dyn Stage>> {
    #[cfg(feature = "metrics")]
    if let Some(metrics) = instruments.metrics() {
        return Some(Arc::clone(metrics) as Arc<dyn Stage>);
    }
    let _ = instruments;
    None
}

#[cfg(feature = "metrics")]
impl Stage for crate::metrics::Metrics {
    fn watch<'a>(
        &'a self,
        ability: &'a crate::Ability,
        ctx: &crate::Context,
        _args: &serde_json::Value,
    ) -> Option<super::Settle<'a>> {
        let timer = self.start(&ability.metered, ability.name(), ctx.via());
        Some(Box::new(move |outcome| {
            timer.finish(outcome.map(drop).map_err(crate::AbilityError::code));
        }))
    }
}
