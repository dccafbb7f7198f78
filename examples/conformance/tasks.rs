//! The suite's background-task tools (the tasks extension): a call from a client that
//! declares the extension becomes a task when its handler first waits.

use std::time::Duration;

use abilities::{AbilityError, Content, Context, ability, resource::Contents};
use serde_json::json;

fn text(text: String) -> Contents {
    Contents::new([Content::text(text)])
}

/// Greets by name, always in the request.
#[ability(semantic = "READ")]
fn greet(#[param(description = "Who to greet.")] name: String) -> Contents {
    text(format!("Hello, {name}!"))
}

/// Works for `seconds`, then reports its label; a task when the client can have one.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn slow_compute(
    #[param(description = "How long to work.")] seconds: f64,
    #[param(description = "What to report.")] label: String,
) -> Contents {
    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))).await;
    text(format!("slow_compute done: {label}"))
}

/// Works a second, then fails as a tool error (the task completes, with `isError`).
#[ability(semantic = "EXECUTE", task = "required")]
async fn failing_job() -> Result<Contents, AbilityError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(AbilityError::failed(
        "failing_job failed, as it always does",
    ))
}

/// Fails inside the server: the task ends `failed`, with an error and no result.
#[ability(semantic = "EXECUTE", task = "optional")]
async fn protocol_error_job() -> Result<Contents, AbilityError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    Err(AbilityError::internal(
        "protocol_error_job failed inside the server",
    ))
}

/// Asks, as a task, whether to delete a file (its own confirmation: no gate before it).
#[ability(semantic = "DELETE", task = "required", confirm = false)]
async fn confirm_delete(
    ctx: &Context,
    #[param(description = "The file to delete.")] filename: String,
) -> Result<Contents, AbilityError> {
    ctx.background().await;
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    });
    let answer = ctx
        .ask("confirm")
        .elicit(&format!("Confirm deletion of {filename}?"), schema)
        .await?;
    let confirmed = answer.content.as_ref().and_then(|c| c["confirm"].as_bool()) == Some(true);
    Ok(text(if confirmed {
        format!("deleted {filename}")
    } else {
        format!("kept {filename}")
    }))
}

/// Asks two things at once, as a task.
#[ability(semantic = "EXECUTE", task = "required")]
async fn multi_input(ctx: &Context) -> Result<Contents, AbilityError> {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let (first, second) = tokio::join!(
        ctx.ask("first").elicit("First name?", schema.clone()),
        ctx.ask("second").elicit("Second name?", schema),
    );
    let name = |e: abilities::client::Elicitation| {
        e.content
            .and_then(|c| c["name"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    Ok(text(format!("got {} and {}", name(first?), name(second?))))
}

/// Asks for a name in the request, then greets as a task.
#[ability(semantic = "EXECUTE", task = "required")]
async fn test_tool_with_task(ctx: &Context) -> Result<Contents, AbilityError> {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"]
    });
    let answer = ctx
        .ask("user_name")
        .elicit("What is your name?", schema)
        .await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let name = answer
        .content
        .and_then(|c| c["name"].as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(text(format!("Hello, {name}!")))
}
