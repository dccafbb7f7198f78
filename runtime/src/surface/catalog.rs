//! Resources and prompts of the native surface: the lists clients see, URI and name lookup,
//! and what a call's output becomes (`resources/read` contents, `prompts/get` messages,
//! `completion/complete` values).

use std::collections::HashMap;
use std::sync::Arc;

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

impl<T: serde::de::DeserializeOwned> Listing<T> {
    fn from_json(entries: Vec<(String, Value)>) -> Self {
        let mut listing = Self {
            items: Vec::with_capacity(entries.len()),
            ranks: Vec::with_capacity(entries.len()),
        };
        for (rank, entry) in entries {
            match serde_json::from_value(entry) {
                Ok(item) => {
                    listing.items.push(item);
                    listing.ranks.push(rank);
                }
                Err(error) => {
                    tracing::error!(%error, ability = rank, "a catalog entry did not convert")
                }
            }
        }
        listing
    }
}

/// Resources, templates and prompts, derived once from the registry.
pub(crate) struct Catalog {
    pub(crate) resources: Listing<rmcp::model::Resource>,
    pub(crate) templates: Listing<rmcp::model::ResourceTemplate>,
    pub(crate) prompts: Listing<rmcp::model::Prompt>,
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
        let mut resources = Vec::new();
        let mut templates = Vec::new();
        let mut prompts = Vec::new();
        let mut by_uri = HashMap::new();
        let mut by_template = Vec::new();
        let mut by_prompt = HashMap::new();
        for (i, ability) in registry.iter().enumerate() {
            match ability.kind() {
                AbilityKind::Resource { uri, mime_type } => {
                    let mut entry = Map::new();
                    let key = if ability.template.is_some() {
                        by_template.push(i);
                        "uriTemplate"
                    } else {
                        by_uri.insert(uri.to_string(), i);
                        "uri"
                    };
                    entry.insert(key.into(), json!(uri));
                    describe(&mut entry, ability);
                    if let Some(mime_type) = mime_type {
                        entry.insert("mimeType".into(), json!(mime_type));
                    }
                    let list = if ability.template.is_some() {
                        &mut templates
                    } else {
                        &mut resources
                    };
                    list.push((ability.name().to_owned(), Value::Object(entry)));
                }
                AbilityKind::Prompt => {
                    let mut entry = Map::new();
                    describe(&mut entry, ability);
                    let arguments: Vec<Value> = ability
                        .arguments
                        .iter()
                        .map(|a| {
                            let mut arg = Map::new();
                            arg.insert("name".into(), json!(a.name));
                            if let Some(description) = &a.description {
                                arg.insert("description".into(), json!(description));
                            }
                            arg.insert("required".into(), json!(a.required));
                            Value::Object(arg)
                        })
                        .collect();
                    if !arguments.is_empty() {
                        entry.insert("arguments".into(), Value::Array(arguments));
                    }
                    by_prompt.insert(ability.tool_name().to_owned(), i);
                    prompts.push((ability.name().to_owned(), Value::Object(entry)));
                }
                _ => {}
            }
        }
        Self {
            resources: Listing::from_json(resources),
            templates: Listing::from_json(templates),
            prompts: Listing::from_json(prompts),
            by_uri,
            by_template,
            by_prompt,
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
    pub(crate) fn reference(&self, registry: &Registry, reference: &Value) -> Option<usize> {
        match reference.get("type").and_then(Value::as_str)? {
            "ref/prompt" => self.prompt(reference.get("name").and_then(Value::as_str)?),
            "ref/resource" => {
                let uri = reference.get("uri").and_then(Value::as_str)?;
                self.by_uri.get(uri).copied().or_else(|| {
                    self.by_template.iter().copied().find(|&i| {
                        registry
                            .at(i)
                            .is_some_and(|a| matches!(a.kind(), AbilityKind::Resource { uri: u, .. } if u == uri))
                    })
                })
            }
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
    ) -> Result<Value, AbilityError> {
        let call = self
            .resolve(registry, uri)
            .ok_or_else(|| unknown_resource(uri))?;
        let ability = registry
            .at(call.ability)
            .ok_or_else(|| unknown_resource(uri))?;
        let output = Box::pin(ability.call_guarded(ctx, call.args, guards)).await?;
        let items = crate::resource::contents(uri, call.mime_type.as_deref(), output);
        Ok(json!({ "contents": items }))
    }

    /// `prompts/get`: `{description, messages}`.
    pub(crate) async fn get_prompt(
        &self,
        registry: &Registry,
        ctx: Context,
        guards: &Arc<Guards>,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, AbilityError> {
        let ability = self
            .prompt(name)
            .and_then(|i| registry.at(i))
            .ok_or_else(|| AbilityError::unknown(Lookup::Prompt, name))?;
        let args = prompt_arguments(ability, arguments);
        let output = Box::pin(ability.call_guarded(ctx, args, guards)).await?;
        Ok(prompt_result(ability, output))
    }

    /// `completion/complete` for `reference`'s `argument`: `{completion: {values, total,
    /// hasMore}}`. The caller needs the ability's scope, as for a call.
    pub(crate) fn complete_reference(
        &self,
        registry: &Registry,
        ctx: &Context,
        reference: &Value,
        argument: &str,
        typed: &str,
    ) -> Result<Value, AbilityError> {
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

fn describe(entry: &mut Map<String, Value>, ability: &Ability) {
    entry.insert("name".into(), json!(ability.tool_name()));
    if let Some(title) = ability.title() {
        entry.insert("title".into(), json!(title));
    }
    entry.insert("description".into(), json!(ability.description()));
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
pub(crate) fn prompt_result(ability: &Ability, output: CallOutput) -> Value {
    let (structured, content, prompt) = output.into_bare();
    let mut description = ability.description().to_owned();
    let messages: Vec<Value> = match prompt {
        Some(prompt) => {
            if let Some(own) = prompt.description {
                description = own;
            }
            prompt
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
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
                .map(|content| json!({"role": "user", "content": content}))
                .collect()
        }
    };
    json!({"description": description, "messages": messages})
}

/// The `completion/complete` values for `argument` of `ability`, given what the user typed:
/// the argument's completer if it has one, else the values its schema spells out, filtered
/// by prefix (case-insensitive).
pub(crate) fn complete(
    ability: &Ability,
    ctx: &Context,
    argument: &str,
    typed: &str,
) -> Result<Value, AbilityError> {
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
    Ok(json!({
        "completion": {"values": values, "total": total, "hasMore": total > MAX_COMPLETIONS}
    }))
}
