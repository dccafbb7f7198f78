//! One MCP-AQL operation, routed to its ability and run through the pipeline with
//! MCP-AQL's stages (parameters, collection query, confirmation gate), its relations included.

use serde_json::{Map, Value, json};

use super::envelope::{Done, data_of};
use super::introspect::{INTROSPECT_PARAMS, introspect};
use super::params::{Sent, confirmation_token, reject_unknown};
use super::relations::Relation;
use super::stages::{Params, Query, Select};
use super::{Endpoint, Operation, Severity, Table, Warning, relations, warning};
use crate::ability::SITE_ID;
use crate::pipeline::{self, Around, Confirm, Policy, Retry, Stage};
use crate::surface::Served;
use crate::{AbilityError, Context, ErrorCode, Registry, Semantic};

/// Run one request, as read, through `endpoint`: route it to its ability, then through the
/// pipeline with MCP-AQL's stages.
pub(super) async fn operation_once(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    served: &Served<'_>,
    sent: Sent,
) -> Result<Done, AbilityError> {
    let Sent {
        name,
        mut params,
        warnings: fallback,
    } = sent;
    let name = name.as_str();
    if name == "introspect" {
        return introspect_once(table, registry, endpoint, served, params);
    }
    let Some(op) = table.get(name) else {
        return Err(unknown_operation(name));
    };
    let (ability, token, include) = prepare(table, registry, endpoint, op, &mut params)?;
    let checks = Params { op };
    let query = op.collection.as_ref().map(|items| Query { op, items });
    let select = op.selection.as_ref().map(|schema| Select { schema });
    let gate = gate(table, op, served, &params, token);
    let mut stages: Vec<&dyn Stage> = vec![&checks];
    if let Some(query) = &query {
        stages.push(query);
    }
    if let Some(select) = &select {
        stages.push(select);
    }
    if let Some(gate) = &gate {
        stages.push(gate);
    }
    // A confirmed retry was counted against the rate when its token was issued.
    let run_ctx = match &gate {
        Some(gate) if gate.continues() => ctx.clone().continuing(),
        _ => ctx.clone(),
    };
    let outcome = Box::pin(pipeline::run(
        ability,
        run_ctx,
        Value::Object(params),
        Around::guarded(served.guards, ability),
        &stages,
    ))
    .await;
    if let Some(gate) = &gate {
        gate.settle(ability, ctx.caller(), &outcome).await;
    }
    let mut output = outcome?;
    let mut warnings = fallback;
    warnings.extend(deprecation(op));
    warnings.extend(output.take_warnings());
    let (value, content, _) = output.into_bare();
    let mut data = data_of(value, content);
    for relation in include {
        let related = relations::related(
            table,
            registry,
            ctx,
            served,
            relation,
            &mut data,
            &mut warnings,
        );
        Box::pin(related).await?;
    }
    Ok(Done { data, warnings })
}

/// The confirmation gate of a call of `op` with `params`, when it has one: none where the
/// chain confirms nothing (then no token lets a call skip its rate).
fn gate<'t>(
    table: &Table,
    op: &'t Operation,
    served: &'t Served<'t>,
    params: &Map<String, Value>,
    token: Option<String>,
) -> Option<Confirm<'t>> {
    (served.guards.confirms && op.gated).then(|| Confirm {
        name: &op.name,
        danger: op.danger,
        holder: &served.holder,
        guards: served.guards,
        sent: params.clone(),
        token,
        policy: Policy {
            ttl: table.config.confirm_ttl,
            ask: table.config.elicit_confirmation,
        },
        retry: Retry::Params,
        reached: std::sync::atomic::AtomicBool::new(false),
    })
}

/// What an operation's call starts from, once it is sent to the right endpoint: its ability,
/// the confirmation token sent, and the relations to include; the parameters left are the
/// ability's (the reserved `_` ones taken out).
#[allow(
    clippy::type_complexity,
    reason = "three values taken out of one call's params"
)]
fn prepare<'t>(
    table: &'t Table,
    registry: &'t Registry,
    endpoint: &Endpoint,
    op: &'t Operation,
    params: &mut Map<String, Value>,
) -> Result<
    (
        &'t std::sync::Arc<crate::Ability>,
        Option<String>,
        Vec<&'t Relation>,
    ),
    AbilityError,
> {
    check_endpoint(table, endpoint, &op.name, &op.family, op.category)?;
    let Some(ability) = registry.at(op.ability) else {
        return Err(AbilityError::internal(
            "the operation table is inconsistent",
        ));
    };
    let token = confirmation_token(params, op.confirms);
    params.retain(|k, _| !k.starts_with('_'));
    let include = relations::take_include(op, params)?;
    // A `site_id` the operation does not list (no site is served) would be taken out by the
    // core stages and ignored: refused as unknown here, like every parameter not listed
    // (the rest in the `Params` stage, after the site check).
    if params.contains_key(SITE_ID) && !op.accepted.iter().any(|p| p == SITE_ID) {
        reject_unknown(&op.name, params, &op.accepted)?;
    }
    Ok((ability, token, include))
}

/// `introspect`, sent as an operation: checked, and answered from the table. Its envelope
/// is closed: errors carry a code and a message only.
fn introspect_once(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    served: &Served<'_>,
    mut params: Map<String, Value>,
) -> Result<Done, AbilityError> {
    let bare = |e: AbilityError| AbilityError::new(e.code().clone(), e.message());
    check_endpoint(table, endpoint, "introspect", "read", Semantic::Read).map_err(bare)?;
    params.retain(|k, _| !k.starts_with('_'));
    reject_unknown("introspect", &params, &INTROSPECT_PARAMS).map_err(bare)?;
    introspect(table, registry, &params, served.skills)
        .map_err(bare)
        .map(|data| Done {
            data,
            warnings: Vec::new(),
        })
}

/// `NOT_FOUND_OPERATION` for an operation the table does not have.
fn unknown_operation(name: &str) -> AbilityError {
    let shown: String = name.chars().take(100).collect();
    AbilityError::new(
        ErrorCode::NotFoundOperation,
        format!("Unknown operation: '{shown}'. List operations with introspect"),
    )
    .with_details(json!({"operation": shown}))
}

/// The warning that `op` is deprecated, when it is.
fn deprecation(op: &Operation) -> Option<Warning> {
    let note = op.deprecated.as_ref()?;
    let message = if note.is_empty() {
        format!("Operation '{}' is deprecated", op.name)
    } else {
        format!("Operation '{}' is deprecated: {note}", op.name)
    };
    Some(warning(
        "DEPRECATION_WARNING",
        Severity::Medium,
        message,
        json!({"operation": op.name}),
    ))
}

/// `VALIDATION_ENDPOINT_MISMATCH` when an operation is sent to another family's tool.
pub(super) fn check_endpoint(
    table: &Table,
    endpoint: &Endpoint,
    operation: &str,
    family: &str,
    category: Semantic,
) -> Result<(), AbilityError> {
    let Endpoint::Family(actual) = endpoint else {
        return Ok(());
    };
    if actual == family {
        return Ok(());
    }
    let expected = table.tool_name(&Endpoint::Family(family.to_owned()));
    Err(AbilityError::new(
        ErrorCode::ValidationEndpointMismatch,
        format!(
            "Operation '{operation}' is a {} operation: call it through {expected}, not {}",
            category.as_str(),
            table.tool_name(endpoint)
        ),
    )
    .with_details(json!({
        "operation": operation,
        "expected_endpoint": family,
        "actual_endpoint": actual,
        "expected_tool": expected
    })))
}
