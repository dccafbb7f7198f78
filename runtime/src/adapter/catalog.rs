//! What the catalog serves besides tools: `resources/read` (a skill's file, or a resource
//! ability's output), `prompts/get` and `completion/complete`, each asking the client in
//! rounds of multi-round input where the ability does.

use rmcp::RoleServer;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptRequestParams, GetPromptResponse,
    ReadResourceRequestParams, ReadResourceResponse,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::McpHandler;
use super::client;
use super::input::{Asked, Pending};
use crate::rpc::ToRpc;

impl McpHandler {
    /// `resources/read`: a skill's file as it was given, else the resource ability's output.
    pub(super) async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if let Some(read) = self.inner.snapshot().skills.read(&request.uri) {
            return Ok(read.into());
        }
        let (ctx, question) = self.asking_context(
            context,
            Asked {
                method: "resources/read",
                name: &request.uri,
                arguments: &Value::Null,
                state: request.request_state.as_deref(),
                responses: request.input_responses,
            },
            None,
        )?;
        let snapshot = self.inner.snapshot();
        let contents = snapshot
            .catalog
            .read(
                &snapshot.registry,
                ctx.with_via("resource"),
                &self.inner.guards,
                &request.uri,
            )
            .await;
        if let Some(input) = Pending::answer(question.as_ref(), &self.inner, contents.is_err())? {
            return Ok(input.into());
        }
        Ok(contents.map_err(|e| e.to_rpc())?.into())
    }

    /// `prompts/get`: the prompt ability's messages.
    pub(super) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // The arguments bind a multi-round state: copied only on a protocol that has one.
        let arguments = match &request.arguments {
            Some(arguments) if client::is_stateless(&context) => Value::Object(arguments.clone()),
            _ => Value::Null,
        };
        let (ctx, question) = self.asking_context(
            context,
            Asked {
                method: "prompts/get",
                name: &request.name,
                arguments: &arguments,
                state: request.request_state.as_deref(),
                responses: request.input_responses,
            },
            None,
        )?;
        let snapshot = self.inner.snapshot();
        let prompt = snapshot
            .catalog
            .get_prompt(
                &snapshot.registry,
                ctx.with_via("prompt"),
                &self.inner.guards,
                &request.name,
                request.arguments,
            )
            .await;
        if let Some(input) = Pending::answer(question.as_ref(), &self.inner, prompt.is_err())? {
            return Ok(input.into());
        }
        Ok(prompt.map_err(|e| e.to_rpc())?.into())
    }

    /// `completion/complete`: values for a prompt's or a resource template's argument.
    pub(super) fn completion(
        &self,
        request: &CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let snapshot = self.inner.snapshot();
        snapshot
            .catalog
            .complete_reference(
                &snapshot.registry,
                &self.context(context),
                &request.r#ref,
                &request.argument.name,
                &request.argument.value,
            )
            .map_err(|e| e.to_rpc())
    }
}
