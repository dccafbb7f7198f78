//! The traces link of the chain (feature `otel`): one span per call, the rest of the call run
//! inside it (so the store's and a handler's spans are its children), ended with the
//! outcome.

use std::sync::Arc;

use super::Stage;
use crate::instruments::Instruments;

/// The traces link's stage, when the server traces calls.
pub(super) fn stage(instruments: &Instruments) -> Option<Arc<dyn Stage>> {
    #[cfg(feature = "otel")]
    if let Some(tracing) = instruments.tracing() {
        return Some(Arc::clone(tracing) as Arc<dyn Stage>);
    }
    let _ = instruments;
    None
}

/// A call's span.
#[cfg(feature = "otel")]
mod span {
    use std::borrow::Cow;

    use serde_json::Value;

    use super::super::{Enclose, Settle, Stage};
    use crate::otel::{CallSpan, Tracing};
    use crate::{Ability, Context};

    impl Stage for Tracing {
        fn enclose<'a>(
            &'a self,
            ability: &'a Ability,
            ctx: &Context,
            args: &Value,
        ) -> Option<(Settle<'a>, Enclose<'a>)> {
            let cx = self.call(CallSpan {
                ability: ability.name(),
                tool: ability.is_tool().then(|| ability.tool_name()),
                surface: ctx.via(),
                semantic: ability.semantic().as_str(),
                principal: ctx.caller().principal(),
                args: match args {
                    Value::Object(map) if self.records_arguments() => {
                        Some(ability.redacted(map).map_or(Cow::Borrowed(map), Cow::Owned))
                    }
                    _ => None,
                },
                declared: ability
                    .tool_input_schema()
                    .get("properties")
                    .and_then(Value::as_object),
            });
            let within = cx.clone();
            let enclose: Enclose<'a> =
                Box::new(move |work| Box::pin(crate::otel::within(Some(&within), work)));
            let settle: Settle<'a> = Box::new(move |outcome| {
                crate::otel::end(&cx, outcome.map(drop).map_err(|e| e.code().as_str()));
            });
            Some((settle, enclose))
        }
    }
}
