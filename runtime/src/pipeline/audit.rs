//! The audit trail as a stage: it watches every call of a server from before its first check
//! and records one event however the call ends (see [`crate::audit`]).

use serde_json::Value;

use super::{Settle, Stage};
use crate::audit::{Audit, CallEvent};
use crate::{Ability, Context};

impl Stage for Audit {
    fn watch<'a>(
        &'a self,
        ability: &'a Ability,
        ctx: &Context,
        args: &Value,
    ) -> Option<Settle<'a>> {
        if !self.enabled() {
            return None;
        }
        let event = CallEvent::start(ability, ctx, args);
        Some(Box::new(move |outcome| {
            event.finish(self, outcome.map(drop))
        }))
    }
}
