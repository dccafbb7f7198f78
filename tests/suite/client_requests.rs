//! Handlers ask the client: elicitation (structured input from the user) and sampling (the
//! client's model), through a real rmcp client that declares, or does not declare, them.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]
#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated (SEP-2577); clients still offer it"
)]

use crate::support;

use abilities::protocol::rmcp::model::{
    CallToolRequestParams, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorData,
};
use abilities::protocol::rmcp::service::{RequestContext, RunningService};
use abilities::protocol::rmcp::{ClientHandler, RoleClient, ServiceExt};
use abilities::{AbilityError, Context, ability, client::ElicitAction};
use serde_json::{Value, json};

/// Ask the user for a name.
#[ability(semantic = "EXECUTE")]
async fn ask_name(ctx: &Context) -> Result<Value, AbilityError> {
    let answer = ctx
        .elicit(
            "Who are you?",
            json!({"type": "object", "properties": {"username": {"type": "string"}}, "required": ["username"]}),
        )
        .await?;
    Ok(json!({"accepted": answer.action == ElicitAction::Accept, "content": answer.content}))
}

/// Ask the client's model.
#[ability(semantic = "EXECUTE", flatten)]
async fn ask_model(ctx: &Context, prompt: String) -> Result<String, AbilityError> {
    ctx.sample_text(&prompt, 50).await
}

/// A client that answers what it declares.
#[derive(Clone)]
struct Answering {
    declares: bool,
}

impl ClientHandler for Answering {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares {
            json!({"elicitation": {}, "sampling": {}})
        } else {
            json!({})
        };
        support::client_config("answering", capabilities)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        assert_eq!(asked["message"], "Who are you?");
        assert_eq!(
            asked["requestedSchema"]["properties"]["username"]["type"],
            "string"
        );
        Ok(
            serde_json::from_value(json!({"action": "accept", "content": {"username": "ada"}}))
                .expect("a result"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&params).expect("serializes");
        let prompt = asked["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("echo: {prompt}")},
            "model": "test-model"
        }))
        .expect("a result"))
    }
}

async fn connect(declares: bool) -> RunningService<RoleClient, Answering> {
    let server = builder!().build().expect("valid");
    let handler = server.handler(None);
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = handler.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Answering { declares }
        .serve(client_io)
        .await
        .expect("connects")
}

async fn call(client: &RunningService<RoleClient, Answering>, name: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .expect("answers");
    serde_json::to_value(result).expect("serializes")
}

#[tokio::test]
async fn elicitation_asks_the_user_through_the_client() {
    let client = connect(true).await;
    let result = call(&client, "ask_name", json!({})).await;
    assert_eq!(
        result["structuredContent"],
        json!({"result": {"accepted": true, "content": {"username": "ada"}}})
    );
}

#[tokio::test]
async fn sampling_asks_the_clients_model() {
    let client = connect(true).await;
    let result = call(&client, "ask_model", json!({"input": "hello"})).await;
    assert_eq!(
        result["structuredContent"],
        json!({"result": "echo: hello"})
    );
}

#[tokio::test]
async fn a_client_without_the_capability_gets_a_clear_error() {
    let client = connect(false).await;
    for (name, args, capability) in [
        ("ask_name", json!({}), "elicitation"),
        ("ask_model", json!({"input": "hi"}), "sampling"),
    ] {
        let result = call(&client, name, args).await;
        assert_eq!(result["isError"], true, "{result}");
        let error: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or_default())
                .expect("JSON");
        assert_eq!(
            error,
            json!({
                "code": "CLIENT_CAPABILITY_MISSING",
                "message": format!("the client did not declare the {capability} capability")
            })
        );
    }
}

#[tokio::test]
async fn in_process_there_is_nobody_to_ask() {
    let registry = abilities::Registry::collect_in(module_path!()).expect("valid");
    let err = registry
        .call(Context::new(), "ask_name", Value::Null)
        .await
        .err()
        .map(|e| e.code().to_string());
    assert_eq!(err.as_deref(), Some("CLIENT_CAPABILITY_MISSING"));
}
