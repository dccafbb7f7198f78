//! The suite's multi-round input tools and prompt (protocol 2026-07-28): each asks through
//! its context, as any handler does; the server turns the questions into `input_required`.

use abilities::{
    AbilityError, Content, Context, ability, client::LogLevel, prompt::Prompt, resource::Contents,
};
use serde_json::{Value, json};

/// An object schema of one required property of `kind`.
fn one(property: &str, kind: &str) -> Value {
    json!({
        "type": "object",
        "properties": {property: {"type": kind}},
        "required": [property]
    })
}

/// A string the user entered in an accepted elicitation, or what they did instead.
fn entered(answer: &abilities::client::Elicitation, property: &str) -> String {
    match answer.content.as_ref().and_then(|c| c[property].as_str()) {
        Some(value) => value.to_owned(),
        None => format!("({:?})", answer.action).to_lowercase(),
    }
}

fn text(text: String) -> Contents {
    Contents::new([Content::text(text)])
}

/// Asks for the user's name, then greets them.
#[ability(semantic = "READ")]
async fn test_input_required_result_elicitation(ctx: &Context) -> Result<Contents, AbilityError> {
    let answer = ctx
        .ask("user_name")
        .elicit("What is your name?", one("name", "string"))
        .await?;
    Ok(text(format!("Hello, {}!", entered(&answer, "name"))))
}

/// Asks the client's model a question.
#[ability(semantic = "READ")]
async fn test_input_required_result_sampling(ctx: &Context) -> Result<Contents, AbilityError> {
    let answer = ctx
        .ask("capital_question")
        .sample_text("What is the capital of France?", 100)
        .await?;
    Ok(text(format!("Sampling response: {answer}")))
}

/// Lists the client's roots.
#[ability(semantic = "READ")]
async fn test_input_required_result_list_roots(ctx: &Context) -> Result<Contents, AbilityError> {
    let roots = ctx.ask("client_roots").list_roots().await?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(text(format!("Client roots: {}", uris.join(", "))))
}

/// Asks for a confirmation; the answer comes back only through a verified request state.
#[ability(semantic = "READ")]
async fn test_input_required_result_request_state(ctx: &Context) -> Result<Contents, AbilityError> {
    let answer = ctx
        .ask("confirm")
        .elicit("Please confirm", one("ok", "boolean"))
        .await?;
    let ok = answer.content.as_ref().and_then(|c| c["ok"].as_bool());
    Ok(text(format!("state-ok: confirmed = {ok:?}")))
}

/// As `test_input_required_result_request_state`: its state is sealed, so a changed one is
/// refused.
#[ability(semantic = "READ")]
async fn test_input_required_result_tampered_state(
    ctx: &Context,
) -> Result<Contents, AbilityError> {
    let answer = ctx
        .ask("confirm")
        .elicit("Please confirm", one("ok", "boolean"))
        .await?;
    Ok(text(format!("state verified: {:?}", answer.action)))
}

/// Asks three things in one round: the user, the model and the client's roots.
#[ability(semantic = "READ")]
async fn test_input_required_result_multiple_inputs(
    ctx: &Context,
) -> Result<Contents, AbilityError> {
    let (name, greeting, roots) = tokio::join!(
        ctx.ask("user_name")
            .elicit("What is your name?", one("name", "string")),
        ctx.ask("greeting").sample_text("Generate a greeting", 50),
        ctx.ask("client_roots").list_roots(),
    );
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(text(format!(
        "{greeting}, {} ({} roots)",
        entered(&name, "name"),
        roots.len()
    )))
}

/// Asks two things, one round after the other.
#[ability(semantic = "READ")]
async fn test_input_required_result_multi_round(ctx: &Context) -> Result<Contents, AbilityError> {
    let name = ctx
        .ask("step1")
        .elicit("Step 1: What is your name?", one("name", "string"))
        .await?;
    let color = ctx
        .ask("step2")
        .elicit(
            "Step 2: What is your favorite color?",
            one("color", "string"),
        )
        .await?;
    Ok(text(format!(
        "{} likes {}",
        entered(&name, "name"),
        entered(&color, "color")
    )))
}

/// Asks only what the client can answer: each question the client has no capability for is
/// left out.
#[ability(semantic = "READ")]
async fn test_input_required_result_capabilities(ctx: &Context) -> Result<Contents, AbilityError> {
    let (name, model, roots) = tokio::join!(
        ctx.ask("user_name")
            .elicit("What is your name?", one("name", "string")),
        ctx.ask("capital_question")
            .sample_text("What is the capital of France?", 100),
        ctx.ask("client_roots").list_roots(),
    );
    let mut answered = Vec::new();
    for (kind, outcome) in [
        ("elicitation", name.map(|_| ())),
        ("sampling", model.map(|_| ())),
        ("roots", roots.map(|_| ())),
    ] {
        match outcome {
            Ok(()) => answered.push(kind),
            Err(e) if e.code() == &abilities::ErrorCode::ClientCapabilityMissing => {}
            Err(e) => return Err(e),
        }
    }
    Ok(text(format!("answered: {}", answered.join(", "))))
}

/// A prompt that asks the user for its context first.
#[ability(semantic = "READ", prompt)]
async fn test_input_required_result_prompt(ctx: &Context) -> Result<Prompt, AbilityError> {
    let answer = ctx
        .ask("user_context")
        .elicit(
            "What context should the prompt use?",
            one("context", "string"),
        )
        .await?;
    Ok(Prompt::new().user(format!("Use this context: {}", entered(&answer, "context"))))
}

/// Asks the client's model; fails when the client did not declare sampling (`-32021` on
/// protocol 2026-07-28).
#[ability(semantic = "READ")]
async fn test_missing_capability(ctx: &Context) -> Result<Contents, AbilityError> {
    let answer = ctx.sample_text("Say hello", 20).await?;
    Ok(text(answer))
}

/// Asks the user something while the call is open: on 2026-07-28 the answer stream carries
/// only the `input_required` result, never a request of its own.
#[ability(semantic = "READ")]
async fn test_streaming_elicitation(ctx: &Context) -> Result<Contents, AbilityError> {
    let answer = ctx
        .elicit("Anything to add?", one("note", "string"))
        .await?;
    Ok(text(format!("noted: {}", entered(&answer, "note"))))
}

/// Logs one message at info level: sent only when the request asked for a level.
#[ability(semantic = "READ")]
async fn test_logging_tool(ctx: &Context) -> Contents {
    ctx.log(LogLevel::Info, "test_logging_tool ran").await;
    text("logged".to_owned())
}
