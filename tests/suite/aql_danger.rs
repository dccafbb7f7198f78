//! MCP-AQL danger levels by name pattern: applied over the semantic's default for operations
//! that do not declare one, shown with the reason by introspection, and confirmed like any
//! operation at `destructive` or above.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use crate::support::Lines;
use abilities::{Ability, Context, Danger, Registry, Semantic, Surface, ability};
use serde_json::{Value, json};

fn ability(name: &'static str, semantic: Semantic, danger: Option<Danger>) -> Ability {
    let mut builder = Ability::builder(name, semantic)
        .description("A fixture.")
        .input_schema(json!({"type": "object", "properties": {}}))
        .output_schema(json!({"type": "object", "properties": {"done": {"type": "boolean"}}}))
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!({"done": true})) });
    if let Some(danger) = danger {
        builder = builder.danger(danger);
    }
    builder.build().expect("builds")
}

/// A stdio session with `registry` served on the MCP-AQL single endpoint.
async fn single(registry: Registry) -> Lines {
    let server = builder!()
        .registry(registry)
        .surface(Surface::aql_single())
        .build()
        .expect("valid");
    Lines::initialized(&server).await
}

async fn aql(lines: &mut Lines, id: u64, args: Value) -> Value {
    let result = lines.call(id, "mcp_aql", args).await;
    serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON")
}

/// Old statistics.
#[ability(semantic = "READ")]
#[deprecated(since = "0.2.0", note = "use get_stats")]
fn old_stats() -> u64 {
    7
}

#[tokio::test]
async fn a_deprecated_function_is_a_deprecated_ability() {
    let registry = Registry::collect_in(module_path!()).expect("valid");
    assert_eq!(
        registry.get("old_stats").and_then(Ability::deprecated),
        Some("use get_stats")
    );
    let mut lines = single(registry).await;
    let detail = aql(
        &mut lines,
        2,
        json!({"operation": "introspect", "params": {"query": "operations", "name": "old_stats"}}),
    )
    .await;
    // A number comes back: the result is a scalar, as `introspect types` says too.
    assert_eq!(
        detail["data"]["operation"]["returns"]["kind"], "scalar",
        "{detail}"
    );
    assert_eq!(
        detail["data"]["operation"]["description"],
        "Old statistics. Deprecated: use get_stats. Danger: safe (the READ default)."
    );
}

#[tokio::test]
async fn deprecated_operations_answer_with_a_warning() {
    let registry = Registry::from_abilities([Ability::builder("get_totals", Semantic::Read)
        .description("Totals.")
        .deprecated("use get_stats")
        .output_schema(json!({"type": "object", "properties": {"done": {"type": "boolean"}}}))
        .handler(|_ctx: Context, _args: Value| async move { Ok(json!({"done": true})) })
        .build()
        .expect("builds")])
    .expect("valid");
    let mut lines = single(registry).await;
    let answer = aql(&mut lines, 2, json!({"operation": "get_totals"})).await;
    assert_eq!(
        answer,
        json!({"success": true, "data": {"done": true}, "warnings": [{
            "code": "DEPRECATION_WARNING",
            "message": "Operation 'get_totals' is deprecated: use get_stats",
            "severity": "medium",
            "details": {"operation": "get_totals"}
        }]})
    );
    // A batch item is its data alone: the official batch schema has no place for warnings.
    let batch = aql(
        &mut lines,
        20,
        json!({"operations": [{"operation": "get_totals"}]}),
    )
    .await;
    crate::support::assert_aql_batch(&batch);
    assert_eq!(
        batch["results"][0]["result"],
        json!({"success": true, "data": {"done": true}})
    );
    let list = aql(
        &mut lines,
        3,
        json!({"operation": "introspect", "params": {"query": "operations"}}),
    )
    .await;
    assert_eq!(
        list["data"]["operations"][1]["description"], "Totals. Deprecated: use get_stats.",
        "{list}"
    );
}

#[test]
fn name_patterns_raise_and_never_lower() {
    assert_eq!(
        Danger::from_name("drop_table"),
        Some((Danger::Forbidden, "drop_*"))
    );
    assert_eq!(
        Danger::from_name("deploy_production"),
        Some((Danger::Forbidden, "*_production"))
    );
    assert_eq!(
        Danger::from_name("purge_cache"),
        Some((Danger::Dangerous, "purge_*"))
    );
    assert_eq!(
        Danger::from_name("delete_user_permanently"),
        Some((Danger::Dangerous, "*_permanently"))
    );
    assert_eq!(Danger::from_name("get_user"), None);
}

#[tokio::test]
async fn introspection_shows_the_level_and_why_and_the_gate_holds() {
    let registry = Registry::from_abilities([
        ability("drop_table", Semantic::Delete, None),
        ability("purge_cache", Semantic::Execute, None),
        ability("force_sync", Semantic::Execute, Some(Danger::Reversible)),
        ability("get_stats", Semantic::Read, None),
    ])
    .expect("valid");
    let mut lines = single(registry).await;
    let list = aql(
        &mut lines,
        2,
        json!({"operation": "introspect", "params": {"query": "operations"}}),
    )
    .await;
    let describe = |name: &str| -> String {
        list["data"]["operations"]
            .as_array()
            .expect("operations")
            .iter()
            .find(|o| o["name"] == name)
            .and_then(|o| o["description"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        describe("drop_table"),
        "A fixture. Needs confirmation (danger: forbidden, the name matches 'drop_*')."
    );
    assert_eq!(
        describe("purge_cache"),
        "A fixture. Needs confirmation (danger: dangerous, the name matches 'purge_*')."
    );
    // A declared level stands, whatever the name says.
    assert_eq!(describe("force_sync"), "A fixture.");
    let detail = aql(
        &mut lines,
        3,
        json!({"operation": "introspect", "params": {"query": "operations", "name": "get_stats"}}),
    )
    .await;
    assert_eq!(
        detail["data"]["operation"]["description"], "A fixture. Danger: safe (the READ default).",
        "{detail}"
    );

    // The raised level is enforced: an EXECUTE named purge_* needs confirmation.
    let gate = aql(&mut lines, 4, json!({"operation": "purge_cache"})).await;
    assert_eq!(gate["error"]["code"], "CONFIRMATION_REQUIRED", "{gate}");
    let done = aql(&mut lines, 5, json!({"operation": "force_sync"})).await;
    assert_eq!(done["data"], json!({"done": true}), "{done}");
}
