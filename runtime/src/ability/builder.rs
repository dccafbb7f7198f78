//! [`AbilityBuilder`]: an ability whose schemas and handler are given at run time.

use std::borrow::Cow;
use std::future::Future;
use std::panic::Location;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::handler::ClosureHandler;
use super::{
    Ability, AbilityKind, AbilityOutput, Annotations, Danger, Handler, Input, Parts, Semantic,
    TaskSupport,
};
use crate::{AbilityError, Context, RegistryError};

/// Builds an [`Ability`] at run time; see [`Ability::builder`].
///
/// The schemas are JSON Schema 2020-12 in the ability's own shape: an input schema that is not
/// an object is wrapped under `input` on the wire, an output schema that is not an object
/// under `result`, exactly as for `#[ability]`. Without an input schema the ability takes no
/// arguments; without an output schema it declares none, and a non-object result is still
/// wrapped under `result` so clients always receive an object.
#[must_use]
pub struct AbilityBuilder {
    name: Cow<'static, str>,
    semantic: Semantic,
    title: Option<Cow<'static, str>>,
    description: Option<Cow<'static, str>>,
    category: Option<Cow<'static, str>>,
    permission: Option<Cow<'static, str>>,
    public: bool,
    site: bool,
    annotations: Annotations,
    kind: AbilityKind,
    family: Option<Cow<'static, str>>,
    meta: Option<Map<String, Value>>,
    danger: Option<Danger>,
    confirm: Option<bool>,
    task: TaskSupport,
    rate: Option<crate::Rate>,
    sensitive: Vec<Cow<'static, str>>,
    deprecated: Option<Cow<'static, str>>,
    input: Option<Value>,
    output: Option<Value>,
    handler: Option<Arc<dyn Handler>>,
    location: &'static Location<'static>,
}

impl AbilityBuilder {
    pub(super) fn new(
        name: Cow<'static, str>,
        semantic: Semantic,
        location: &'static Location<'static>,
    ) -> Self {
        Self {
            name,
            semantic,
            title: None,
            description: None,
            category: None,
            permission: None,
            public: true,
            site: true,
            annotations: Annotations::default(),
            kind: AbilityKind::Tool,
            family: None,
            meta: None,
            danger: None,
            confirm: None,
            task: TaskSupport::Forbidden,
            rate: None,
            sensitive: Vec::new(),
            deprecated: None,
            input: None,
            output: None,
            handler: None,
            location,
        }
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the ability does (required).
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The ability's category.
    pub fn category(mut self, category: impl Into<Cow<'static, str>>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// The scope a caller needs.
    pub fn permission(mut self, scope: impl Into<Cow<'static, str>>) -> Self {
        self.permission = Some(scope.into());
        self
    }

    /// Whether it is listed on public surfaces (default true).
    pub fn public(mut self, public: bool) -> Self {
        self.public = public;
        self
    }

    /// Whether calls are checked against the server's site identity (default true).
    pub fn site(mut self, site: bool) -> Self {
        self.site = site;
        self
    }

    /// Overrides of the semantic's default annotations (each `Some` wins).
    pub fn annotations(mut self, overrides: Annotations) -> Self {
        self.annotations = overrides;
        self
    }

    /// Serve it as a resource at `uri` (a URI template when it has `{variables}`).
    pub fn resource(
        mut self,
        uri: impl Into<Cow<'static, str>>,
        mime_type: Option<Cow<'static, str>>,
    ) -> Self {
        self.kind = AbilityKind::Resource {
            uri: uri.into(),
            mime_type,
        };
        self
    }

    /// Serve it as a prompt: its input properties are the prompt's arguments.
    pub fn prompt(mut self) -> Self {
        self.kind = AbilityKind::Prompt;
        self
    }

    /// `key` set to `value` in the tool's `_meta` (see [`Ability::meta`]).
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta
            .get_or_insert_default()
            .insert(key.into(), value.into());
        self
    }

    /// The MCP-AQL endpoint family.
    pub fn family(mut self, family: impl Into<Cow<'static, str>>) -> Self {
        self.family = Some(family.into());
        self
    }

    /// Mark the ability deprecated, saying why or what to use instead. MCP-AQL answers its
    /// calls with a `DEPRECATION_WARNING` and introspection says so.
    pub fn deprecated(mut self, note: impl Into<Cow<'static, str>>) -> Self {
        self.deprecated = Some(note.into());
        self
    }

    /// Whether the ability may run as a background task (default: never).
    pub fn task(mut self, support: TaskSupport) -> Self {
        self.task = support;
        self
    }

    /// How often one caller may call it (default: the server's
    /// [`rate_limit`](crate::ServerBuilder::rate_limit), if any).
    pub fn rate(mut self, rate: crate::Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Top-level arguments whose values never appear in a log, an audit event or an error
    /// message (passwords, API keys).
    pub fn sensitive<S: Into<Cow<'static, str>>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Self {
        self.sensitive.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether a call must be confirmed by the user before it runs (default: when its danger
    /// level is destructive or above). See [`Ability::needs_confirmation`].
    pub fn confirm(mut self, confirm: bool) -> Self {
        self.confirm = Some(confirm);
        self
    }

    /// The MCP-AQL danger level (default: from the semantic).
    pub fn danger(mut self, danger: Danger) -> Self {
        self.danger = Some(danger);
        self
    }

    /// The input's JSON Schema, in the ability's own shape.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input = Some(schema);
        self
    }

    /// The output's JSON Schema, in the ability's own shape.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output = Some(schema);
        self
    }

    /// The async closure the ability runs, given the validated input (bare: not wrapped under
    /// `input`). It returns anything an `#[ability]` function may return: a serializable
    /// value (`serde_json::Value` included), [`Rich`](crate::Rich),
    /// [`Contents`](crate::Contents) or [`Prompt`](crate::Prompt).
    pub fn handler<F, Fut, R>(mut self, handler: F) -> Self
    where
        F: Fn(Context, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, AbilityError>> + Send + 'static,
        R: AbilityOutput,
    {
        self.handler = Some(Arc::new(ClosureHandler(handler)));
        self
    }

    /// A handler of your own type (one that holds a connection, say).
    pub fn handler_object(mut self, handler: Arc<dyn Handler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Check the name and schemas, transform the schemas for the wire and compile the
    /// validator. Fails naming what is missing or wrong.
    pub fn build(self) -> Result<Ability, RegistryError> {
        let at = format!("{}:{}", self.location.file(), self.location.line());
        let missing = |what: &'static str| RegistryError::Incomplete {
            name: self.name.to_string(),
            at: at.clone(),
            missing: what,
        };
        if self.task != TaskSupport::Forbidden && self.kind != AbilityKind::Tool {
            return Err(RegistryError::Conflict {
                name: self.name.to_string(),
                at,
                problem: "a task runs a tool in the background: resources and prompts answer in the request",
            });
        }
        let description = self
            .description
            .clone()
            .ok_or_else(|| missing("description"))?;
        let handler = self.handler.clone().ok_or_else(|| missing("handler"))?;
        let schema_of =
            |side: &'static str, value: Value| -> Result<Map<String, Value>, RegistryError> {
                // The schema is kept as the author wrote it (its dialect and title included):
                // clients read it as given.
                match value {
                    Value::Object(map) => Ok(map),
                    Value::Bool(true) => Ok(Map::new()),
                    Value::Bool(false) => Ok(Map::from_iter([(
                        "not".to_owned(),
                        Value::Object(Map::new()),
                    )])),
                    _ => Err(RegistryError::InvalidSchema {
                        name: self.name.to_string(),
                        at: at.clone(),
                        reason: format!("the {side} schema must be a JSON object or a boolean"),
                    }),
                }
            };
        let input = match self.input {
            None => Input::None,
            Some(value) => Input::Value {
                schema: schema_of("input", value)?,
                default: None,
                description: None,
                complete: None,
                sensitive: false,
            },
        };
        let output = self.output.map(|v| schema_of("output", v)).transpose()?;
        Ability::from_parts(Parts {
            name: self.name,
            title: self.title,
            description,
            category: self.category,
            semantic: self.semantic,
            permission: self.permission,
            public: self.public,
            site: self.site,
            annotations: self.annotations,
            kind: self.kind,
            family: self.family,
            meta: self.meta,
            danger: self.danger,
            confirm: self.confirm,
            task: self.task,
            rate: self.rate,
            sensitive: self.sensitive,
            deprecated: self.deprecated,
            input,
            output,
            handler,
            requires: Vec::new(),
            rust_path: Cow::Borrowed(""),
            file: Cow::Borrowed(self.location.file()),
            line: self.location.line(),
        })
    }
}
