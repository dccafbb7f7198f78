//! The confirmation gate: a call of an ability that must be confirmed
//! ([`Ability::needs_confirmation`]) runs only once the user said so, on every surface. Where
//! the client can be asked, it is asked (elicitation; on 2026-07-28 a round of multi-round
//! input); otherwise the call is refused with `CONFIRMATION_REQUIRED` and a single-use token,
//! bound to the caller, the tool and its arguments, that the retry carries. Surfaces put the
//! gate where the chain has its `confirmation` link.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{Call, Guards, Place, Stage, StageFuture};
use crate::confirmation;
use crate::ledger::Holder;
use crate::{Ability, AbilityError, Context, Danger, ElicitAction, ErrorCode};

/// The argument a retry carries its confirmation token in (MCP-AQL: a parameter).
pub(crate) const TOKEN_ARGUMENT: &str = "_confirmation";

/// How long a token is valid, and whether the user is asked directly when the client can be.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policy {
    pub(crate) ttl: Duration,
    pub(crate) ask: bool,
}

impl Default for Policy {
    /// Five minutes; ask where the client can answer.
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            ask: true,
        }
    }
}

/// Where the refusal tells the model to put the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// A tool's arguments: `_confirmation` beside them.
    Arguments,
    /// An MCP-AQL operation's `params._confirmation` (its envelope shows the token).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    Params,
}

/// The gate of one call.
pub(crate) struct Confirm<'t> {
    /// What a token confirms: the tool, or the MCP-AQL operation.
    pub(crate) name: &'t str,
    pub(crate) danger: Danger,
    pub(crate) holder: &'t Holder<'t>,
    pub(crate) guards: &'t Guards,
    /// The arguments as sent (without `_` keys): what a token is bound to.
    pub(crate) sent: Map<String, Value>,
    pub(crate) token: Option<String>,
    pub(crate) policy: Policy,
    pub(crate) retry: Retry,
    /// Whether the call reached the gate (it was refused before otherwise).
    pub(crate) reached: std::sync::atomic::AtomicBool,
}

impl<'t> Confirm<'t> {
    /// The gate of a call of `ability` through a tool's arguments `args`, when the ability
    /// must be confirmed and the chain confirms: the token the retry carries is taken out of
    /// the arguments (so the ability's input never sees it).
    pub(crate) fn of_tool(
        ability: &'t Ability,
        holder: &'t Holder<'t>,
        guards: &'t Guards,
        args: &mut Value,
    ) -> Option<Self> {
        if !(guards.confirms && ability.needs_confirmation()) {
            return None;
        }
        let token = match args {
            Value::Object(map) => map.remove(TOKEN_ARGUMENT),
            _ => None,
        };
        let sent = match args {
            Value::Object(map) => map
                .iter()
                .filter(|(k, _)| !k.starts_with('_'))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            _ => Map::new(),
        };
        Some(Self {
            name: ability.tool_name(),
            danger: ability.gated_danger(),
            holder,
            guards,
            sent,
            // A token that is not a string confirms nothing: the call is asked again.
            token: token.and_then(|t| t.as_str().map(str::to_owned)),
            policy: Policy::default(),
            retry: Retry::Arguments,
            reached: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether the call is a confirmed retry: its rate was counted when its token was
    /// issued (and is again if the token is refused).
    pub(crate) fn continues(&self) -> bool {
        self.token.is_some()
    }

    /// Once the call ended with `outcome`: a retry carrying a token went on without its rate
    /// taken, so if it was refused before the gate looked at the token (its arguments, its
    /// site, a middleware), it counts now, like any call refused that far.
    pub(crate) async fn settle<T>(
        &self,
        ability: &Ability,
        caller: &crate::Caller,
        outcome: &Result<T, AbilityError>,
    ) {
        let reached = self.reached.load(std::sync::atomic::Ordering::Relaxed);
        if self.continues() && outcome.is_err() && !reached {
            // The call is refused already; a rate it exceeds now changes nothing of it.
            let _ = self.guards.rates.take(ability, caller).await;
        }
    }
}

impl Stage for Confirm<'_> {
    fn place(&self) -> Place {
        Place::Gate
    }

    fn waits(&self) -> bool {
        true
    }

    fn wait<'a>(&'a self, call: &'a Call<'_>) -> Option<StageFuture<'a>> {
        let ctx: &'a Context = &call.ctx;
        let ability = call.ability;
        Some(Box::pin(async move { confirm(self, ctx, ability).await }))
    }
}

/// A confirmed retry: its token redeemed (audited and counted), or refused, when the call
/// counts against the rate like any other.
async fn redeem(
    gate: &Confirm<'_>,
    ctx: &Context,
    ability: &Ability,
    token: &str,
) -> Result<(), AbilityError> {
    let redeemed = confirmation::redeem(gate.holder, token, gate.name, &gate.sent).await;
    let counted = if redeemed.is_ok() {
        "redeemed"
    } else {
        "refused"
    };
    record(gate, ctx, "confirmation.redeemed", &redeemed, Some(counted));
    if redeemed.is_err() {
        // The call went on as a confirmed retry, its rate not taken again; with its token
        // refused it is a call like any other, and counts.
        gate.guards.rates.take(ability, ctx.caller()).await?;
    }
    redeemed
}

/// Let a call that must be confirmed through: with a valid token, or (where the client can
/// answer) the user's answer to a direct question; otherwise `CONFIRMATION_REQUIRED`,
/// offering a fresh token.
async fn confirm(gate: &Confirm<'_>, ctx: &Context, ability: &Ability) -> Result<(), AbilityError> {
    gate.reached
        .store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(token) = &gate.token {
        return redeem(gate, ctx, ability, token).await;
    }
    // What the user is shown names the arguments, but no sensitive value.
    let shown = ability
        .redacted(&gate.sent)
        .unwrap_or_else(|| gate.sent.clone());
    let message = format!(
        "Confirm {} '{}' with {}",
        what(gate.danger),
        gate.name,
        Value::Object(shown)
    );
    if gate.policy.ask
        && ctx.can_elicit()
        && let Some(answered) = ask_user(gate, ctx, &message).await
    {
        return answered;
    }
    let issued = confirmation::issue(
        gate.holder,
        gate.name,
        &gate.sent,
        gate.policy.ttl,
        message.clone(),
    )
    .await;
    let counted = issued.is_ok().then_some("issued");
    record(gate, ctx, "confirmation.issued", &issued, counted);
    Err(required(gate, &message, issued?))
}

/// Audit `event` with how it went, and count it as `counted` (when it counts).
fn record<T>(
    gate: &Confirm<'_>,
    ctx: &Context,
    event: &str,
    outcome: &Result<T, AbilityError>,
    counted: Option<&'static str>,
) {
    let outcome = outcome.as_ref().map(drop);
    crate::audit::confirmation(&gate.guards.audit, event, ctx, gate.name, outcome);
    if let Some(counted) = counted {
        gate.guards.instruments.confirmation(counted);
    }
}

/// What the user is asked to confirm: a `destructive operation`, or (an ability declared to
/// need confirmation below that level) an `operation`.
fn what(danger: Danger) -> String {
    if danger.needs_confirmation() {
        format!("{} operation", danger.as_str())
    } else {
        "operation".to_owned()
    }
}

/// Why the call needs confirmation, as the refusal's `reasons` say.
fn reason(danger: Danger) -> String {
    if danger.needs_confirmation() {
        format!("{} operations need confirmation", danger.as_str())
    } else {
        "this operation is declared to need confirmation".to_owned()
    }
}

/// `CONFIRMATION_REQUIRED`, offering `issued`: where a tool's retry puts the token, and (for
/// a tool) the token in the details, which the model reads.
fn required(gate: &Confirm<'_>, message: &str, issued: crate::error::Confirmation) -> AbilityError {
    let mut details = json!({
        "operation": gate.name,
        "danger_level": gate.danger.as_str(),
        "reasons": [reason(gate.danger)],
        "confirmation_message": message,
    });
    let error = match gate.retry {
        Retry::Params => {
            return AbilityError::new(
                ErrorCode::ConfirmationRequired,
                format!(
                    "Operation '{}' is {}: retry with params._confirmation set to the token",
                    gate.name,
                    gate.danger.as_str()
                ),
            )
            .with_details(details)
            .with_confirmation(issued);
        }
        Retry::Arguments => {
            details["confirmation_token"] = Value::from(issued.token);
            details["expires_at"] = Value::from(issued.expires_at);
            AbilityError::new(
                ErrorCode::ConfirmationRequired,
                format!(
                    "'{}' needs the user's confirmation: ask the user to confirm, then call it \
                     again with the same arguments and '{TOKEN_ARGUMENT}' set to \
                     details.confirmation_token",
                    gate.name
                ),
            )
        }
    };
    error.with_details(details)
}

/// Ask the user to confirm, by elicitation: `None` when the client cannot be asked here (a
/// token is issued instead).
async fn ask_user(
    gate: &Confirm<'_>,
    ctx: &Context,
    message: &str,
) -> Option<Result<(), AbilityError>> {
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Go ahead", "default": false}},
        "required": ["confirm"]
    });
    match ctx.elicit(message, schema).await {
        Ok(answer)
            if answer.action == ElicitAction::Accept
                && answer.content.as_ref().and_then(|c| c.get("confirm"))
                    == Some(&Value::Bool(true)) =>
        {
            // An answer sealed in a request state comes again with every retry carrying
            // it: it confirms one call, like a token.
            if let Some(answer) = ctx.sealed_answer()
                && let Err(refused) =
                    confirmation::spend_answer(gate.holder, &answer, gate.name).await
            {
                return Some(Err(refused));
            }
            Some(Ok(()))
        }
        Ok(_) => Some(Err(AbilityError::permission_denied(format!(
            "The user did not confirm '{}'",
            gate.name
        ))
        .with_details(json!({"operation": gate.name, "reason": "not confirmed"})))),
        // Asked in this round (multi-round input): the call answers `input_required`
        // and the answer comes with the retry. No token is issued for such a round.
        Err(asked) if asked.code() == &ErrorCode::InputRequired => Some(Err(asked)),
        // No elicitation here: fall back to a token.
        Err(_) => None,
    }
}
