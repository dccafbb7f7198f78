//! MCP-AQL's stages of a call: what the surface adds to the pipeline for one operation.
//!
//! Among the arguments: unknown parameters are refused and an UPDATE's `input` is spread into
//! the ability's arguments ([`Params`]); a collection's query keys are taken out and parsed
//! ([`Query`], which also applies the query to the handler's items when it finishes), or
//! another READ operation's `fields` ([`Select`]). Before
//! the handler: the confirmation gate ([`Gate`]).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::confirm;
use super::query::{self, State};
use super::{Operation, Table};
use crate::pipeline::{Call, CallOutput, Place, Stage, StageFuture};
use crate::surface::Served;
use crate::{AbilityError, Context, ElicitAction, ErrorCode};

/// Refuse parameters the operation does not take; spread an UPDATE's `input`.
pub(super) struct Params<'t> {
    pub(super) op: &'t Operation,
}

impl Stage for Params<'_> {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        super::params::reject_unknown(&self.op.name, &call.args, &self.op.accepted)?;
        let args = std::mem::take(&mut call.args);
        call.args = super::params::update_args(self.op, args)?;
        Ok(())
    }
}

/// `fields` on a READ operation that is not a collection: taken out of the arguments, and
/// applied to the object it returns.
pub(super) struct Select<'t> {
    pub(super) schema: &'t Map<String, Value>,
}

impl Stage for Select<'_> {
    fn check<'s>(&'s self, call: &mut Call<'s>) -> Result<(), AbilityError> {
        let Some(sent) = call.args.remove("fields") else {
            return Ok(());
        };
        let fields = match query::fields(Some(sent), self.schema, &[], query::Fields::Full)? {
            // `standard` keeps a collection item's scalar fields; one object is whole.
            query::Fields::Full | query::Fields::Standard => return Ok(()),
            fields => fields,
        };
        let schema = self.schema;
        call.then(move |output| {
            if let Some(data) = output.take_bare() {
                output.set_bare(query::select_fields(data, &fields, schema));
            }
        });
        Ok(())
    }
}

/// A collection operation's query: parsed from the arguments (the handler may push parts of
/// it down through `CollectionQuery`), applied to the items it returns, its warnings left in
/// the output.
pub(super) struct Query<'t> {
    pub(super) op: &'t Operation,
    pub(super) items: &'t Map<String, Value>,
}

impl Stage for Query<'_> {
    fn check<'s>(&'s self, call: &mut Call<'s>) -> Result<(), AbilityError> {
        let spec = query::parse(
            &mut call.args,
            self.items,
            &self.op.computed,
            &self.op.params,
        )?;
        let state = Arc::new(State::new(spec));
        call.ctx = call.ctx.clone().with_surface_data(Arc::clone(&state));
        let (op, items) = (self.op, self.items);
        call.then(move |output| apply(op, items, &state, output));
        Ok(())
    }
}

/// Apply the query of `state` to the items in `output`: the page, and its warnings.
fn apply(op: &Operation, item_schema: &Map<String, Value>, state: &State, output: &mut CallOutput) {
    let mut items = output.take_bare().unwrap_or(Value::Null);
    // `{items, total}`: the list, and the size of the collection it is from.
    let mut reported = None;
    if op.envelope
        && let Value::Object(map) = &mut items
    {
        reported = map.get("total").and_then(Value::as_u64);
        items = map.remove("items").unwrap_or(Value::Null);
    }
    let (data, warnings) = query::apply(state, items, reported, item_schema, &op.computed);
    output.set_bare(data);
    output.warn(warnings);
}

/// An operation at `destructive` or above runs only once confirmed: with a valid token, or
/// the user's answer to a direct question; otherwise the call is refused with
/// `CONFIRMATION_REQUIRED`, offering the token issued.
pub(super) struct Gate<'t> {
    pub(super) table: &'t Table,
    pub(super) op: &'t Operation,
    pub(super) served: &'t Served<'t>,
    /// The parameters as sent (without `_` keys): what a token is bound to.
    pub(super) sent: Map<String, Value>,
    pub(super) token: Option<String>,
}

impl Stage for Gate<'_> {
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
    gate: &Gate<'_>,
    ctx: &Context,
    ability: &crate::Ability,
    token: &str,
) -> Result<(), AbilityError> {
    let (op, params) = (gate.op, &gate.sent);
    let audit = &gate.served.guards.audit;
    let redeemed = confirm::redeem(&gate.served.holder, token, &op.name, params).await;
    crate::audit::confirmation(
        audit,
        "confirmation.redeemed",
        ctx,
        &op.name,
        redeemed.as_ref().map(drop),
    );
    gate.served
        .guards
        .instruments
        .confirmation(if redeemed.is_ok() {
            "redeemed"
        } else {
            "refused"
        });
    if redeemed.is_err() {
        // The call went on as a confirmed retry, its rate not taken again; with its token
        // refused it is a call like any other, and counts.
        gate.served.guards.rates.take(ability, ctx.caller()).await?;
    }
    redeemed
}

/// Let an operation that needs confirmation through: with a valid token, or (where the
/// client supports it) the user's answer to a direct question; otherwise
/// `CONFIRMATION_REQUIRED`, offering a fresh token.
async fn confirm(
    gate: &Gate<'_>,
    ctx: &Context,
    ability: &crate::Ability,
) -> Result<(), AbilityError> {
    let (table, op, params) = (gate.table, gate.op, &gate.sent);
    let audit = &gate.served.guards.audit;
    if let Some(token) = &gate.token {
        return redeem(gate, ctx, ability, token).await;
    }
    // What the user is shown names the parameters, but no sensitive value.
    let shown = ability.redacted(params).unwrap_or_else(|| params.clone());
    let message = format!(
        "Confirm {} operation '{}' with {}",
        op.danger.as_str(),
        op.name,
        Value::Object(shown)
    );
    if table.config.elicit_confirmation
        && ctx.can_elicit()
        && let Some(answered) = ask_user(gate, ctx, &message).await
    {
        return answered;
    }
    let issued = confirm::issue(
        &gate.served.holder,
        &op.name,
        params,
        table.config.confirm_ttl,
        message.clone(),
    )
    .await;
    crate::audit::confirmation(
        audit,
        "confirmation.issued",
        ctx,
        &op.name,
        issued.as_ref().map(drop),
    );
    if issued.is_ok() {
        gate.served.guards.instruments.confirmation("issued");
    }
    let issued = issued?;
    Err(AbilityError::new(
        ErrorCode::ConfirmationRequired,
        format!(
            "Operation '{}' is {}: retry with params._confirmation set to the token",
            op.name,
            op.danger.as_str()
        ),
    )
    .with_details(json!({
        "operation": op.name,
        "danger_level": op.danger.as_str(),
        "reasons": [format!("{} operations need confirmation", op.danger.as_str())],
        "confirmation_message": message,
    }))
    .with_confirmation(issued))
}

/// Ask the user to confirm, by elicitation: `None` when the client cannot be asked here (a
/// token is issued instead).
async fn ask_user(
    gate: &Gate<'_>,
    ctx: &Context,
    message: &str,
) -> Option<Result<(), AbilityError>> {
    let op = gate.op;
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
                    confirm::spend_answer(&gate.served.holder, &answer, &op.name).await
            {
                return Some(Err(refused));
            }
            Some(Ok(()))
        }
        Ok(_) => Some(Err(AbilityError::permission_denied(format!(
            "The user did not confirm '{}'",
            op.name
        ))
        .with_details(json!({"operation": op.name, "reason": "not confirmed"})))),
        // Asked in this round (multi-round input): the call answers `input_required`
        // and the answer comes with the retry. No token is issued for such a round.
        Err(asked) if asked.code() == &ErrorCode::InputRequired => Some(Err(asked)),
        // No elicitation here: fall back to a token.
        Err(_) => None,
    }
}
