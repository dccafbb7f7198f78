//! One MCP-AQL operation, routed to its ability and run through the pipeline with
//! MCP-AQL's stages (parameters, collection query, confirmation gate), its relations included.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::confirm::Issued;
use super::envelope::data_of;
use super::introspect::introspect;
use super::params::{confirmation_token, reject_unknown, resolve_params};
use super::stages::{Gate, Params, Query};
use super::{Endpoint, Severity, Table, relations, warning};
use crate::pipeline::{self, Around, Stage};
use crate::surface::Served;
use crate::{AbilityError, Context, ErrorCode, Registry, Semantic};

/// A refused operation: the error, and the token issued when it needs confirmation.
pub(super) type Refusal = (AbilityError, Option<Issued>);

/// Run one `{operation, params}` request through `endpoint`: route it to its ability, then
/// through the pipeline with MCP-AQL's stages.
pub(super) async fn operation_once(
    table: &Table,
    registry: &Registry,
    endpoint: &Endpoint,
    ctx: &Context,
    served: &Served<'_>,
    request: &Map<String, Value>,
) -> Result<(Value, Vec<Value>), Refusal> {
    let refused = |error: AbilityError| (error, None);
    let name = match request.get("operation") {
        Some(Value::String(name)) => name.as_str(),
        None | Some(Value::Null) => {
            return Err(refused(AbilityError::new(
                ErrorCode::ValidationMissingParam,
                "Missing required parameter 'operation'. Expected: an operation name; list them with introspect",
            )
            .with_details(json!({"param_name": "operation"}))));
        }
        Some(_) => {
            return Err(refused(
                AbilityError::new(
                    ErrorCode::ValidationInvalidType,
                    "Parameter 'operation' expected 'string'",
                )
                .with_details(json!({"param_name": "operation", "expected_type": "string"})),
            ));
        }
    };
    let mut fallback = Vec::new();
    let mut params = resolve_params(request, &mut fallback).map_err(refused)?;
    if name == "introspect" {
        // The introspection envelope is closed: errors carry a code and a message only.
        let bare = |e: AbilityError| (AbilityError::new(e.code().clone(), e.message()), None);
        check_endpoint(table, endpoint, "introspect", "read", Semantic::Read).map_err(bare)?;
        params.retain(|k, _| !k.starts_with('_'));
        reject_unknown(name, &params, &["query", "name"]).map_err(bare)?;
        return introspect(table, registry, &params)
            .map(|data| (data, Vec::new()))
            .map_err(refused);
    }
    let Some(op) = table.get(name) else {
        let shown: String = name.chars().take(100).collect();
        return Err(refused(
            AbilityError::new(
                ErrorCode::NotFoundOperation,
                format!("Unknown operation: '{shown}'. List operations with introspect"),
            )
            .with_details(json!({"operation": shown})),
        ));
    };
    check_endpoint(table, endpoint, &op.name, &op.family, op.category).map_err(refused)?;
    let Some(ability) = registry.at(op.ability) else {
        return Err(refused(AbilityError::internal(
            "the operation table is inconsistent",
        )));
    };
    let token = confirmation_token(&mut params);
    params.retain(|k, _| !k.starts_with('_'));
    let include = relations::take_include(op, &mut params).map_err(refused)?;
    let checks = Params { op };
    let query = op.collection.as_ref().map(|items| Query {
        op,
        items,
        state: OnceLock::new(),
        warnings: OnceLock::new(),
    });
    let gate = op.danger.needs_confirmation().then(|| Gate {
        table,
        op,
        served,
        sent: params.clone(),
        token,
        issued: OnceLock::new(),
    });
    let mut stages: Vec<&dyn Stage> = vec![&checks];
    if let Some(query) = &query {
        stages.push(query);
    }
    if let Some(gate) = &gate {
        stages.push(gate);
    }
    // A confirmed retry was counted against the rate when its token was issued.
    let run_ctx = match &gate {
        Some(gate) if gate.token.is_some() => ctx.clone().continuing(),
        _ => ctx.clone(),
    };
    match Box::pin(pipeline::run(
        ability,
        run_ctx,
        Value::Object(params),
        Around::guarded(served.guards),
        &stages,
    ))
    .await
    {
        Ok(output) => {
            let mut warnings = fallback;
            if let Some(note) = &op.deprecated {
                let message = if note.is_empty() {
                    format!("Operation '{}' is deprecated", op.name)
                } else {
                    format!("Operation '{}' is deprecated: {note}", op.name)
                };
                warnings.push(warning(
                    "DEPRECATION_WARNING",
                    Severity::Medium,
                    message,
                    json!({"operation": op.name}),
                ));
            }
            warnings.extend(
                query
                    .and_then(|q| q.warnings.into_inner())
                    .unwrap_or_default(),
            );
            let (value, content, _) = output.into_bare();
            let mut data = data_of(value, content);
            for relation in include {
                Box::pin(relations::related(
                    table,
                    registry,
                    ctx,
                    served,
                    relation,
                    &mut data,
                    &mut warnings,
                ))
                .await
                .map_err(refused)?;
            }
            Ok((data, warnings))
        }
        Err(error) => {
            let issued = gate.and_then(|gate| gate.issued.into_inner());
            Err((error, issued))
        }
    }
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
