// cargo run --example conformance -- --addr 127.0.0.1:3011
//! The tools, resources and prompts the official MCP conformance suite's server scenarios
//! use, written with `#[ability]` only, served over streamable HTTP at `/mcp`.

mod input;
mod tasks;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use abilities::{
    Ability, AbilityError, Caller, Content, Context, Semantic, Server, ability, auth::StaticTokens,
    client::LogLevel, prompt::Prompt, resource::Contents,
};
use clap::Parser;
use serde_json::json;

/// A 1x1 transparent PNG.
const PNG: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// A WAV file with no samples.
const WAV: [u8; 44] = [
    0x52, 0x49, 0x46, 0x46, 0x24, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20,
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x44, 0xac, 0x00, 0x00, 0x88, 0x58, 0x01, 0x00,
    0x02, 0x00, 0x10, 0x00, 0x64, 0x61, 0x74, 0x61, 0x00, 0x00, 0x00, 0x00,
];

/// Returns a simple text response.
#[ability(semantic = "READ")]
fn test_simple_text() -> Contents {
    Contents::new([Content::text("This is a simple text response for testing.")])
}

/// Returns an image.
#[ability(semantic = "READ")]
fn test_image_content() -> Contents {
    Contents::new([Content::image(PNG, "image/png")])
}

/// Returns audio.
#[ability(semantic = "READ")]
fn test_audio_content() -> Contents {
    Contents::new([Content::audio(WAV, "audio/wav")])
}

/// Returns an embedded resource.
#[ability(semantic = "READ")]
fn test_embedded_resource() -> Contents {
    Contents::new([Content::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
}

/// Returns text, an image and an embedded resource.
#[ability(semantic = "READ")]
fn test_multiple_content_types() -> Contents {
    Contents::new([
        Content::text("Multiple content types test:"),
        Content::image(PNG, "image/png"),
        Content::resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ])
}

/// Sends log messages while it works.
#[ability(semantic = "EXECUTE")]
async fn test_tool_with_logging(ctx: &Context) -> Contents {
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        ctx.log(LogLevel::Info, message).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Contents::new([Content::text("Tool with logging executed successfully")])
}

/// Always fails, as a tool error.
#[ability(semantic = "EXECUTE")]
fn test_error_handling() -> Result<Contents, AbilityError> {
    Err(AbilityError::failed(
        "This tool intentionally returns an error for testing",
    ))
}

/// Reports progress while it works.
#[ability(semantic = "EXECUTE")]
async fn test_tool_with_progress(ctx: &Context) -> Contents {
    for step in [0.0, 50.0, 100.0] {
        ctx.progress(step, Some(100.0), Some(&format!("Completed step {step}")))
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Contents::new([Content::text("Progress tool completed")])
}

/// Asks the client's model.
#[ability(semantic = "EXECUTE")]
async fn test_sampling(
    ctx: &Context,
    #[param(description = "The prompt to send.")] prompt: String,
) -> Result<Contents, AbilityError> {
    let answer = ctx.sample_text(&prompt, 100).await?;
    Ok(Contents::new([Content::text(format!(
        "LLM response: {answer}"
    ))]))
}

/// Asks the user for a username and an email.
#[ability(semantic = "EXECUTE")]
async fn test_elicitation(
    ctx: &Context,
    #[param(description = "What to ask.")] message: String,
) -> Result<Contents, AbilityError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let answer = ctx.elicit(&message, schema).await?;
    Ok(Contents::new([Content::text(format!(
        "User response: {}",
        json!({"action": format!("{:?}", answer.action).to_lowercase(), "content": answer.content})
    ))]))
}

/// Asks with a schema whose fields have defaults.
#[ability(semantic = "EXECUTE")]
async fn test_elicitation_sep1034_defaults(ctx: &Context) -> Result<Contents, AbilityError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }
    });
    let answer = ctx
        .elicit(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(Contents::new([Content::text(format!(
        "Elicitation completed: {:?} {}",
        answer.action,
        answer.content.unwrap_or_default()
    ))]))
}

/// Asks with every kind of enum field.
#[ability(semantic = "EXECUTE")]
async fn test_elicitation_sep1330_enums(ctx: &Context) -> Result<Contents, AbilityError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Choose an option", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Choose a titled option", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "description": "Choose a legacy option", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Choose multiple options",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Choose multiple titled options", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    });
    let answer = ctx
        .elicit("Please select options from the enum fields", schema)
        .await?;
    Ok(Contents::new([Content::text(format!(
        "Elicitation completed: {:?} {}",
        answer.action,
        answer.content.unwrap_or_default()
    ))]))
}

/// Echoes a parameter the client mirrors in the `Mcp-Param-Region` header (`x-mcp-header`),
/// which the server checks against the body before the call.
#[ability(semantic = "READ")]
fn test_custom_header(
    #[param(description = "The region.", header = "Region")] region: String,
) -> Contents {
    Contents::new([Content::text(format!("region={region}"))])
}

/// A static text resource.
#[ability(
    semantic = "READ",
    resource = "test://static-text",
    mime_type = "text/plain"
)]
fn static_text() -> String {
    "This is the content of the static text resource.".into()
}

/// A static binary resource (a PNG image).
#[ability(
    semantic = "READ",
    resource = "test://static-binary",
    mime_type = "image/png"
)]
fn static_binary() -> Contents {
    Contents::new([Content::image(PNG, "image/png")])
}

/// A resource template: data for any id.
#[ability(
    semantic = "READ",
    resource = "test://template/{id}/data",
    mime_type = "application/json"
)]
fn template_data(#[param(description = "The item's id.")] id: String) -> serde_json::Value {
    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
}

/// A resource clients subscribe to.
#[ability(
    semantic = "READ",
    resource = "test://watched-resource",
    mime_type = "text/plain"
)]
fn watched_resource() -> String {
    "Watched resource content".into()
}

/// A simple prompt without arguments.
#[ability(semantic = "READ", prompt)]
fn test_simple_prompt() -> Prompt {
    Prompt::new().user("This is a simple prompt for testing.")
}

/// Values offered for `arg1`.
fn arg1_values(_: &Context, typed: &str) -> Vec<String> {
    ["test", "testing", "value"]
        .iter()
        .filter(|v| v.starts_with(typed))
        .map(|v| (*v).to_owned())
        .collect()
}

/// A prompt with two arguments.
#[ability(semantic = "READ", prompt)]
fn test_prompt_with_arguments(
    #[param(description = "First test argument", complete = arg1_values)] arg1: String,
    #[param(description = "Second test argument")] arg2: String,
) -> Prompt {
    Prompt::new().user(format!(
        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    ))
}

/// A prompt that embeds a resource.
#[ability(semantic = "READ", prompt)]
#[allow(non_snake_case, reason = "the suite names the argument `resourceUri`")]
fn test_prompt_with_embedded_resource(
    #[param(description = "URI of the resource to embed")] resourceUri: String,
) -> Prompt {
    Prompt::new()
        .user(Content::resource_text(
            resourceUri,
            "text/plain",
            "Embedded resource content for testing.",
        ))
        .user("Please process the embedded resource above.")
}

/// A prompt with an image.
#[ability(semantic = "READ", prompt)]
fn test_prompt_with_image() -> Prompt {
    Prompt::new()
        .user(Content::image(PNG, "image/png"))
        .user("Please analyze the image above.")
}

/// A tool whose input schema uses JSON Schema 2020-12 keywords no Rust signature derives
/// (`$defs` with an `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`): built at run time with
/// the schema as written; its arguments are validated against it like any other.
fn json_schema_2020_12_tool() -> Result<Ability, abilities::registry::RegistryError> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    Ability::builder("json_schema_2020_12_tool", Semantic::Read)
        .description("Tool with JSON Schema 2020-12 features")
        .input_schema(schema)
        .handler(|_ctx, args: serde_json::Value| async move { Ok(json!({"received": args})) })
        .build()
}

/// Serve the conformance tools, resources and prompts.
#[derive(Parser)]
struct Args {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:3011")]
    addr: SocketAddr,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let run = async {
        let server = Server::builder()
            .name("abilities-conformance", env!("CARGO_PKG_VERSION"))
            // A site, so the first tool listed is `get_site_context`: the header scenarios of
            // the suite call the first tool with no arguments and expect it to answer.
            .site(abilities::Site::new("conformance", "http://127.0.0.1"))
            .ability(json_schema_2020_12_tool()?)
            // The skills extension: the `site` example's hand-written skill, with a
            // sub-directory (`examples/skills`).
            .skills(abilities::skills!("../skills")?)
            .authenticator(StaticTokens::new().allow_anonymous(Caller::trusted("conformance")))
            .build()?;
        let listener = tokio::net::TcpListener::bind(args.addr).await?;
        println!("http://{}/mcp", listener.local_addr()?);
        abilities::http::serve_router(listener, server.router("/mcp")).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match run.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
