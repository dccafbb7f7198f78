//! Resources and prompts of the native surface: the lists clients see, URI and name lookup,
//! and what a call's output becomes (`resources/read` contents, `prompts/get` messages,
//! `completion/complete` values).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{
    CompleteResult, CompletionInfo, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Reference, Resource, ResourceTemplate,
};
use serde_json::{Map, Value, json};

use crate::ability::Argument;
use crate::error::Lookup;
use crate::pipeline::Guards;
use crate::resource::{schema_values, typed_argument, typed_arguments};
use crate::{
    Ability, AbilityError, AbilityKind, CallOutput, Content, Context, ErrorCode, Registry,
};

/// The most completion values one answer carries (the protocol's limit).
const MAX_COMPLETIONS: usize = 100;

/// One list of the catalog, typed once, with each item's sort key (its ability's name).
pub(crate) struct Listing<T> {
    pub(crate) items: Vec<T>,
    pub(crate) ranks: Vec<String>,
}

impl<T> Listing<T> {
    fn push(&mut self, rank: &str, item: T) {
        self.items.push(item);
        self.ranks.push(rank.to_owned());
    }
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            ranks: Vec::new(),
        }
    }
}

/// Resources, templates and prompts, derived once from the registry.
pub(crate) struct Catalog {
    pub(crate) resources: Listing<Resource>,
    pub(crate) templates: Listing<ResourceTemplate>,
    pub(crate) prompts: Listing<Prompt>,
    by_uri: HashMap<String, usize>,
    by_template: Vec<usize>,
    by_prompt: HashMap<String, usize>,
}

/// A resource read resolved to its ability and arguments.
pub(crate) struct ResourceCall {
    pub(crate) ability: usize,
    pub(crate) args: Value,
    pub(crate) mime_type: Option<String>,
}

impl Catalog {
    pub(crate) fn new(registry: &Registry) -> Self {
        let mut resources = Listing::default();
        let mut templates = Listing::default();
        let mut prompts = Listing::default();
        let mut by_uri = HashMap::new();
        let mut by_template = Vec::new();
        let mut by_prompt = HashMap::new();
        for (i, ability) in registry.iter().enumerate() {
            let (name, title, description) =
                (ability.tool_name(), ability.title(), ability.description());
            match ability.kind() {
                AbilityKind::Resource { uri, mime_type } if ability.template.is_some() => {
                    by_template.push(i);
                    let mut template =
                        ResourceTemplate::new(uri.as_ref(), name).with_description(description);
                    if let Some(title) = title {
                        template = template.with_title(title);
                    }
                    if let Some(mime_type) = mime_type {
                        template = template.with_mime_type(mime_type.as_ref());
                    }
                    templates.push(ability.name(), template);
                }
                AbilityKind::Resource { uri, mime_type } => {
                    by_uri.insert(uri.to_string(), i);
                    let mut resource =
                        Resource::new(uri.as_ref(), name).with_description(description);
                    if let Some(title) = title {
                        resource = resource.with_title(title);
                    }
                    if let Some(mime_type) = mime_type {
                        resource = resource.with_mime_type(mime_type.as_ref());
                    }
                    resources.push(ability.name(), resource);
                }
                AbilityKind::Prompt => {
                    let arguments: Vec<PromptArgument> = ability
                        .arguments
                        .iter()
                        .map(|a| {
                            let argument =
                                PromptArgument::new(a.name.as_str()).with_required(a.required);
                            match &a.description {
                                Some(description) => {
                                    argument.with_description(description.as_str())
                                }
                                None => argument,
                            }
                        })
                        .collect();
                    let arguments = (!arguments.is_empty()).then_some(arguments);
                    let mut prompt = Prompt::new(name, Some(description), arguments);
                    if let Some(title) = title {
                        prompt = prompt.with_title(title);
                    }
                    by_prompt.insert(name.to_owned(), i);
                    prompts.push(ability.name(), prompt);
                }
                _ => {}
            }
        }
        Self {
            resources,
            templates,
            prompts,
            by_uri,
            by_template,
            by_prompt,
        }
    }

    /// List each skill's `SKILL.md` among the resources, after the abilities' (skills are
    /// read through the snapshot's [`SkillSet`](crate::skill::SkillSet), not resolved here).
    pub(crate) fn add_skills(&mut self, skills: &crate::skill::SkillSet) {
        for (uri, resource) in skills.resources() {
            // Ranked after every ability name, in URI order.
            self.resources.push(&format!("\u{ffff}{uri}"), resource);
        }
    }

    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.items.is_empty() || !self.templates.items.is_empty()
    }

    pub(crate) fn has_templates(&self) -> bool {
        !self.templates.items.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !self.prompts.items.is_empty()
    }

    /// The ability serving `uri`: a static resource, else the first template that matches.
    pub(crate) fn resolve(&self, registry: &Registry, uri: &str) -> Option<ResourceCall> {
        if let Some(&i) = self.by_uri.get(uri) {
            let mime_type = mime_type(registry.at(i)?);
            return Some(ResourceCall {
                ability: i,
                args: Value::Object(Map::new()),
                mime_type,
            });
        }
        self.by_template.iter().find_map(|&i| {
            let ability = registry.at(i)?;
            let values = ability.template.as_ref()?.matches(uri)?;
            let properties = ability
                .input_schema()
                .get("properties")
                .and_then(Value::as_object);
            let args = typed_arguments(
                values.into_iter().map(|(k, v)| (k.to_owned(), v)),
                properties,
            );
            Some(ResourceCall {
                ability: i,
                args: Value::Object(args),
                mime_type: mime_type(ability),
            })
        })
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<usize> {
        self.by_prompt.get(name).copied()
    }

    /// The ability a `completion/complete` reference names.
    pub(crate) fn reference(&self, registry: &Registry, reference: &Reference) -> Option<usize> {
        match reference {
            Reference::Prompt(prompt) => self.prompt(&prompt.name),
            Reference::Resource(resource) => {
                let uri = resource.uri.as_str();
                self.by_uri.get(uri).copied().or_else(|| {
                    self.by_template.iter().copied().find(|&i| {
                        registry
                            .at(i)
                            .is_some_and(|a| matches!(a.kind(), AbilityKind::Resource { uri: u, .. } if u == uri))
                    })
                })
            }
            // A kind of reference this version of the protocol does not know.
            _ => None,
        }
    }
}

/// The surface of resources, prompts and completion: each request mapped to a call of the
/// ability that serves it, and the output to the method's result (as JSON; the adapter types
/// it). Errors are the framework's; the adapter sends them as JSON-RPC errors.
impl Catalog {
    /// `resources/read`: `{contents: [...]}`.
    pub(crate) async fn read(
        &self,
        registry: &Registry,
        ctx: Context,
        guards: &Arc<Guards>,
        uri: &str,
    ) -> Result<ReadResourceResult, AbilityError> {
        let call = self
            .resolve(registry, uri)
            .ok_or_else(|| unknown_resource(uri))?;
        let ability = registry
            .at(call.ability)
            .ok_or_else(|| unknown_resource(uri))?;
        let output = Box::pin(ability.call_guarded(ctx, call.args, guards)).await?;
        let items = crate::resource::contents(uri, call.mime_type.as_deref(), output);
        Ok(ReadResourceResult::new(items))
    }

    /// `prompts/get`: `{description, messages}`.
    pub(crate) async fn get_prompt(
        &self,
        registry: &Registry,
        ctx: Context,
        guards: &Arc<Guards>,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<GetPromptResult, AbilityError> {
        let ability = self
            .prompt(name)
            .and_then(|i| registry.at(i))
            .ok_or_else(|| AbilityError::unknown(Lookup::Prompt, name))?;
        let args = prompt_arguments(ability, arguments);
        let output = Box::pin(ability.call_guarded(ctx, args, guards)).await?;
        prompt_result(ability, output)
    }

    /// `completion/complete` for `reference`'s `argument`: `{completion: {values, total,
    /// hasMore}}`. The caller needs the ability's scope, as for a call.
    pub(crate) fn complete_reference(
        &self,
        registry: &Registry,
        ctx: &Context,
        reference: &Reference,
        argument: &str,
        typed: &str,
    ) -> Result<CompleteResult, AbilityError> {
        let ability = self
            .reference(registry, reference)
            .and_then(|i| registry.at(i))
            .ok_or_else(|| {
                AbilityError::new(
                    ErrorCode::NotFoundResource,
                    "the completion reference names no prompt or resource template",
                )
                .with_details(json!({ "ref": reference }))
            })?;
        ability.check_permission(ctx)?;
        complete(ability, ctx, argument, typed)
    }
}

/// `NOT_FOUND_RESOURCE` for a URI no ability serves.
pub(crate) fn unknown_resource(uri: &str) -> AbilityError {
    let shown: String = uri.chars().take(200).collect();
    AbilityError::new(
        ErrorCode::NotFoundResource,
        format!("no resource at '{shown}'"),
    )
    .with_details(json!({ "uri": shown }))
}

fn mime_type(ability: &Ability) -> Option<String> {
    match ability.kind() {
        AbilityKind::Resource { mime_type, .. } => mime_type.as_deref().map(str::to_owned),
        _ => None,
    }
}

/// The arguments of a `prompts/get`: strings typed by each argument's schema (other JSON
/// passes as sent).
pub(crate) fn prompt_arguments(ability: &Ability, given: Option<Map<String, Value>>) -> Value {
    let args = given
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(text) => {
                    let schema = ability
                        .arguments
                        .iter()
                        .find(|a| a.name == name)
                        .map(|a| &a.schema);
                    typed_argument(text, schema)
                }
                other => other,
            };
            (name, value)
        })
        .collect();
    Value::Object(args)
}

/// The `prompts/get` result of a call's output: a [`Prompt`](crate::Prompt)'s messages; else
/// one user message per content block, then the structured output as text (a string as it
/// is, anything else as JSON).
pub(crate) fn prompt_result(
    ability: &Ability,
    output: CallOutput,
) -> Result<GetPromptResult, AbilityError> {
    let (structured, content, prompt) = output.into_bare();
    let mut description = ability.description().to_owned();
    let spoken: Vec<(crate::Role, Content)> = match prompt {
        Some(prompt) => {
            if let Some(own) = prompt.description {
                description = own;
            }
            prompt
                .messages
                .into_iter()
                .map(|m| (m.role, m.content))
                .collect()
        }
        None => {
            let mut blocks: Vec<Content> = content.unwrap_or_default();
            match structured {
                None => {}
                Some(Value::String(text)) => blocks.insert(0, Content::text(text)),
                Some(value) => blocks.insert(0, Content::text(value.to_string())),
            }
            blocks
                .into_iter()
                .map(|content| (crate::Role::User, content))
                .collect()
        }
    };
    let mut messages = Vec::with_capacity(spoken.len());
    for (role, content) in spoken {
        let role = match role {
            crate::Role::User => rmcp::model::Role::User,
            crate::Role::Assistant => rmcp::model::Role::Assistant,
        };
        let Some(block) = content.into_block() else {
            tracing::error!(
                ability = ability.name(),
                "a prompt's passed-through block is no protocol block"
            );
            return Err(AbilityError::internal("the prompt could not be encoded"));
        };
        messages.push(PromptMessage::new(role, block));
    }
    Ok(GetPromptResult::new(messages).with_description(description))
}

/// The `completion/complete` values for `argument` of `ability`, given what the user typed:
/// the argument's completer if it has one, else the values its schema spells out, filtered
/// by prefix (case-insensitive).
pub(crate) fn complete(
    ability: &Ability,
    ctx: &Context,
    argument: &str,
    typed: &str,
) -> Result<CompleteResult, AbilityError> {
    let Some(Argument {
        schema, complete, ..
    }) = ability.arguments.iter().find(|a| a.name == argument)
    else {
        let shown: String = argument.chars().take(100).collect();
        return Err(AbilityError::new(
            ErrorCode::ValidationInvalidValue,
            format!("'{}' has no argument '{shown}'", ability.tool_name()),
        ));
    };
    let mut values = match complete {
        // The completer decides what matches (prefix, fuzzy, a database query).
        Some(complete) => {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| complete(ctx, typed)))
                .map_err(|_| {
                    tracing::error!(ability = ability.name(), "a completer panicked");
                    AbilityError::internal(format!(
                        "completing '{argument}' of '{}' failed unexpectedly",
                        ability.tool_name()
                    ))
                })?
        }
        None => {
            let prefix = typed.to_lowercase();
            schema_values(schema)
                .into_iter()
                .filter(|v| v.to_lowercase().starts_with(&prefix))
                .collect()
        }
    };
    let total = values.len();
    values.truncate(MAX_COMPLETIONS);
    let has_more = total > MAX_COMPLETIONS;
    let completion = CompletionInfo::with_pagination(values, u32::try_from(total).ok(), has_more)
        .map_err(AbilityError::internal)?;
    Ok(CompleteResult::new(completion))
}
