//! Abilities as values: an [`Ability`] owns its metadata, its wire schemas, its compiled
//! validator and its [`Handler`]. `#[ability]` makes one from a const [`AbilityDef`]; the
//! [`AbilityBuilder`] makes one from schemas that arrive at run time. Both go through
//! [`Ability::from_parts`], so both get the same schema transformation, wrapping and checks.

mod builder;
mod def;
mod finite;
mod handler;
mod meta;
mod sensitive;
mod wire;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::validate::Validator;
use serde_json::{Map, Value};

pub use builder::AbilityBuilder;
pub use def::{AbilityDef, InputDef, PropertyDef};
pub use handler::{
    AbilityOutput, CallFuture, Handler, IntoAbilityError, NotResult, Output, Returned,
    no_output_schema,
};
pub use meta::{AbilityKind, Annotations, Completer, Danger, Semantic, TaskSupport};

use crate::normalize::InputShape;
use crate::schema;
use abilities_core::{UriTemplate, check_ability_name, template_variables, tool_name};
use sensitive::sensitive_arguments;
use wire::{arguments, input_schema, output_schema, with_site_id};

use crate::{Rate, RegistryError, Requirement};

/// The optional argument every site-checked tool accepts.
pub(crate) const SITE_ID: &str = "site_id";

/// One ability: what it is (name, semantic, annotations...), its wire schemas and compiled
/// validator, and the handler it runs. Made by `#[ability]` or by [`Ability::builder`].
pub struct Ability {
    name: Cow<'static, str>,
    tool_name: String,
    title: Option<Cow<'static, str>>,
    description: Cow<'static, str>,
    category: Option<Cow<'static, str>>,
    semantic: Semantic,
    permission: Option<Cow<'static, str>>,
    public: bool,
    site: bool,
    annotations: Annotations,
    kind: AbilityKind,
    family: Option<Cow<'static, str>>,
    /// The tool's `_meta`: what the author declared about it, for clients and middleware.
    meta: Option<Arc<Map<String, Value>>>,
    danger: Danger,
    /// `danger` was declared, not taken from the semantic.
    danger_declared: bool,
    /// A call runs only once the user confirmed it.
    confirm: bool,
    /// `confirm` as declared, if it was.
    confirm_declared: Option<bool>,
    /// The danger level a confirmation names: the declared one, or the semantic's default
    /// raised by the name.
    gated: Danger,
    task: TaskSupport,
    rate: Option<Rate>,
    /// The top-level arguments never logged, audited or quoted in an error.
    sensitive: Vec<Cow<'static, str>>,
    deprecated: Option<Cow<'static, str>>,
    rust_path: Cow<'static, str>,
    file: Cow<'static, str>,
    line: u32,
    pub(crate) handler: Arc<dyn Handler>,
    requires: Vec<Requirement>,
    input_schema: Arc<Map<String, Value>>,
    tool_input_schema: Arc<Map<String, Value>>,
    takes_site_id: bool,
    output_schema: Option<Arc<Map<String, Value>>>,
    pub(crate) input_shape: InputShape,
    pub(crate) output_wrapped: bool,
    pub(crate) validator: Option<Validator>,
    pub(crate) arguments: Vec<Argument>,
    pub(crate) template: Option<UriTemplate>,
    /// This ability's series in the metrics of the first server that counted it.
    #[allow(dead_code, reason = "read by the metrics link, when it is built")]
    pub(crate) metered: Slot,
}

/// One argument of a prompt or resource template: a property of the wire input.
#[derive(Debug)]
pub(crate) struct Argument {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) required: bool,
    pub(crate) schema: Value,
    pub(crate) complete: Option<Completer>,
}

/// How an ability takes its input, before the wire transformation.
pub(crate) enum Input {
    /// Nothing: arguments are accepted and ignored.
    None,
    /// Named parameters, each a property of the input object (`#[ability]` without `flatten`).
    Object(&'static [PropertyDef]),
    /// One value with its own schema: `flatten`, or a schema given at run time.
    Value {
        schema: Map<String, Value>,
        default: Option<Value>,
        description: Option<Cow<'static, str>>,
        complete: Option<Completer>,
        /// `#[param(sensitive)]` on the one value: all of it is.
        sensitive: bool,
    },
}

/// Everything an ability is made of, whoever made it.
pub(crate) struct Parts {
    pub(crate) name: Cow<'static, str>,
    pub(crate) title: Option<Cow<'static, str>>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) category: Option<Cow<'static, str>>,
    pub(crate) semantic: Semantic,
    pub(crate) permission: Option<Cow<'static, str>>,
    pub(crate) public: bool,
    pub(crate) site: bool,
    pub(crate) annotations: Annotations,
    pub(crate) kind: AbilityKind,
    pub(crate) family: Option<Cow<'static, str>>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) danger: Option<Danger>,
    /// Whether a call must be confirmed; `None` takes the danger level's answer.
    pub(crate) confirm: Option<bool>,
    pub(crate) task: TaskSupport,
    pub(crate) rate: Option<Rate>,
    /// Top-level arguments marked sensitive besides the input's own (abilities built at run
    /// time name them).
    pub(crate) sensitive: Vec<Cow<'static, str>>,
    pub(crate) deprecated: Option<Cow<'static, str>>,
    pub(crate) input: Input,
    /// The output schema before the wire transformation; `None` when there is none.
    pub(crate) output: Option<Map<String, Value>>,
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) requires: Vec<Requirement>,
    pub(crate) rust_path: Cow<'static, str>,
    pub(crate) file: Cow<'static, str>,
    pub(crate) line: u32,
}

impl Ability {
    /// Start building an ability whose schemas and handler are given at run time (a tool
    /// proxied from another server, a plugin loaded from configuration).
    ///
    /// ```standalone_crate
    /// use abilities::{Ability, Semantic, Server};
    /// use serde_json::{Value, json};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let search = Ability::builder("notes/search", Semantic::Read)
    ///     .description("Search the notes.")
    ///     .input_schema(json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}))
    ///     .output_schema(json!({"type": "array", "items": {"type": "string"}}))
    ///     .handler(|_ctx, args: Value| async move {
    ///         Ok(json!([format!("a note about {}", args["q"].as_str().unwrap_or_default())]))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let server = Server::builder().ability(search).build().unwrap();
    /// let client = server.connect().await.unwrap();
    /// let found = client.call("notes-search", json!({"q": "rust"})).await.unwrap();
    /// assert_eq!(found.structured_content, Some(json!({"result": ["a note about rust"]})));
    /// # });
    /// ```
    #[track_caller]
    pub fn builder(name: impl Into<Cow<'static, str>>, semantic: Semantic) -> AbilityBuilder {
        AbilityBuilder::new(name.into(), semantic, std::panic::Location::caller())
    }

    /// The ability `#[ability]` registered.
    pub(crate) fn from_def(def: &'static AbilityDef) -> Result<Self, RegistryError> {
        let input = match def.input {
            InputDef::None => Input::None,
            // Extractors are no properties: a function of extractors alone takes no input.
            InputDef::Object { properties }
                if properties.iter().all(|p| {
                    let mut probe = schemars::SchemaGenerator::default();
                    (p.schema)(&mut probe).is_none()
                }) =>
            {
                Input::None
            }
            InputDef::Object { properties } => Input::Object(properties),
            InputDef::Flattened {
                schema,
                default,
                description,
                complete,
                sensitive,
            } => Input::Value {
                schema: schema::clean(schema()),
                default: default.map(|f| f()),
                description: description.map(Cow::Borrowed),
                complete,
                sensitive,
            },
        };
        Self::from_parts(Parts {
            name: Cow::Borrowed(def.name),
            title: def.title.map(Cow::Borrowed),
            description: Cow::Borrowed(def.description),
            category: def.category.map(Cow::Borrowed),
            semantic: def.semantic,
            permission: def.permission.map(Cow::Borrowed),
            public: def.public,
            site: def.site,
            annotations: def.annotations,
            kind: def.kind.clone(),
            family: def.family.map(Cow::Borrowed),
            // The macro wrote a JSON object; anything else is not one.
            meta: def
                .meta
                .and_then(|text| serde_json::from_str::<Map<String, Value>>(text).ok()),
            danger: def.danger,
            confirm: def.confirm,
            task: def.task,
            rate: def
                .rate
                .map(|(calls, period_s)| Rate::from_checked(calls, period_s)),
            sensitive: Vec::new(),
            deprecated: def.deprecated.map(Cow::Borrowed),
            input,
            output: (def.output)().map(schema::clean),
            handler: Arc::new(handler::FnHandler(def.call)),
            requires: def.requires.iter().filter_map(|f| f()).collect(),
            rust_path: Cow::Borrowed(def.rust_path),
            file: Cow::Borrowed(def.file),
            line: def.line,
        })
    }

    /// Derive the wire schemas, the validator and the argument list, once.
    pub(crate) fn from_parts(parts: Parts) -> Result<Self, RegistryError> {
        let tool_name = checked_tool_name(&parts)?;
        let gated = danger_of(parts.semantic, parts.danger, &parts.name);
        let confirm = parts.confirm.unwrap_or_else(|| gated.needs_confirmation());
        let (input_schema, input_shape) = input_schema(&parts.input);
        let validator = validator_of(&parts, &input_schema)?;
        let (output_schema, output_wrapped) = output_schema(parts.output);
        let declares_site_id = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(SITE_ID));
        let takes_site_id = parts.site && !declares_site_id;
        let arguments = arguments(
            &parts.input,
            &input_schema,
            matches!(input_shape, InputShape::Wrapped { .. }),
        );
        let template = match &parts.kind {
            AbilityKind::Resource { uri, .. } => UriTemplate::parse(uri),
            _ => None,
        };
        let sensitive = sensitive_arguments(&parts.input, &input_shape, parts.sensitive);
        let input_schema = Arc::new(input_schema);
        let tool_input_schema = if takes_site_id {
            Arc::new(with_site_id(&input_schema))
        } else {
            Arc::clone(&input_schema)
        };
        Ok(Self {
            tool_name,
            title: parts.title,
            description: parts.description,
            category: parts.category,
            semantic: parts.semantic,
            permission: parts.permission,
            public: parts.public,
            site: parts.site,
            annotations: Annotations::for_semantic(parts.semantic).overridden_by(parts.annotations),
            kind: parts.kind,
            family: parts.family,
            meta: parts.meta.filter(|meta| !meta.is_empty()).map(Arc::new),
            danger: parts
                .danger
                .unwrap_or_else(|| Danger::for_semantic(parts.semantic)),
            danger_declared: parts.danger.is_some(),
            confirm_declared: parts.confirm,
            confirm,
            gated,
            task: parts.task,
            rate: parts.rate,
            sensitive,
            deprecated: parts.deprecated,
            rust_path: parts.rust_path,
            file: parts.file,
            line: parts.line,
            handler: parts.handler,
            requires: parts.requires,
            name: parts.name,
            input_schema,
            tool_input_schema,
            takes_site_id,
            output_schema,
            input_shape,
            output_wrapped,
            validator,
            arguments,
            template,
            metered: Slot::default(),
        })
    }

    /// What the author declared about the ability (`meta(...)` on the attribute,
    /// [`AbilityBuilder::meta`]): served as the tool's `_meta`, read by middleware. Empty when
    /// none was.
    pub fn meta(&self) -> &Map<String, Value> {
        static NONE: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        self.meta.as_deref().unwrap_or(&NONE)
    }

    /// The MCP-AQL endpoint family named by `family = "..."`, if any.
    pub fn family(&self) -> Option<&str> {
        self.family.as_deref()
    }

    /// The MCP-AQL danger level: `danger = "..."`, else the semantic's default.
    pub fn danger(&self) -> Danger {
        self.danger
    }

    /// Why the ability is deprecated, if it is (the note of the function's `#[deprecated]`,
    /// or [`AbilityBuilder::deprecated`]); `Some("")` when no reason was given.
    pub fn deprecated(&self) -> Option<&str> {
        self.deprecated.as_deref()
    }

    /// Whether the ability may run as a background task (`task = "..."`).
    pub fn task_support(&self) -> TaskSupport {
        self.task
    }

    /// The top-level arguments marked `#[param(sensitive)]` (or
    /// [`AbilityBuilder::sensitive`]): never logged, audited or quoted in an error message.
    /// An empty name stands for the whole input (a sensitive `flatten` value whose schema is
    /// an object or a union).
    pub fn sensitive(&self) -> &[Cow<'static, str>] {
        &self.sensitive
    }

    /// How often one caller may call it, from `#[ability(rate = "10/min")]` or
    /// [`AbilityBuilder::rate`]; `None` takes the server's default
    /// ([`ServerBuilder::rate_limit`](crate::ServerBuilder::rate_limit)).
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// Whether a call must be confirmed by the user before it runs: `confirm` (or
    /// `confirm = false`) when declared, else whether its danger level (declared, or the
    /// semantic's default raised by a name such as `purge_*`) is
    /// [`Destructive`](Danger::Destructive) or above. The server asks on every surface
    /// (see the `confirmation` link of [`Chain`](crate::middleware::Chain)).
    pub fn needs_confirmation(&self) -> bool {
        self.confirm
    }

    /// The danger level its confirmation names: the declared one, or the semantic's default
    /// raised by the name (`purge_*`...).
    pub(crate) fn gated_danger(&self) -> Danger {
        self.gated
    }

    /// `confirm` (`Some(true)`) or `confirm = false` as declared; `None` when the danger
    /// level decides.
    pub fn confirm_declared(&self) -> Option<bool> {
        self.confirm_declared
    }

    /// Whether the danger level was declared (`danger = "..."`) rather than defaulted.
    pub fn danger_declared(&self) -> bool {
        self.danger_declared
    }

    /// Whether it is served as a tool, a resource or a prompt.
    pub fn kind(&self) -> &AbilityKind {
        &self.kind
    }

    /// Whether it is served as a tool.
    pub fn is_tool(&self) -> bool {
        self.kind == AbilityKind::Tool
    }

    /// The ability name, e.g. `my-plugin/count-posts`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The MCP tool name, e.g. `my-plugin-count-posts`.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// A human-readable title.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// What the ability does (defaults to the function's doc comment).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The description, without a copy where it is a literal (tool lists hold it).
    pub(crate) fn description_cow(&self) -> Cow<'static, str> {
        self.description.clone()
    }

    /// The ability's category.
    pub fn category(&self) -> Option<&str> {
        self.category.as_deref()
    }

    /// Its semantic.
    pub fn semantic(&self) -> Semantic {
        self.semantic
    }

    /// The scope a caller needs.
    pub fn permission(&self) -> Option<&str> {
        self.permission.as_deref()
    }

    /// Whether the ability is listed on public surfaces (`public = false` hides it).
    pub fn is_public(&self) -> bool {
        self.public
    }

    /// Whether calls are checked against the server's site identity (`site = false` opts out).
    pub fn checks_site(&self) -> bool {
        self.site
    }

    /// Annotations: the semantic's defaults with the attribute's overrides.
    pub fn annotations(&self) -> Annotations {
        self.annotations
    }

    /// The input schema as clients see it: always `type: object`.
    pub fn input_schema(&self) -> &Arc<Map<String, Value>> {
        &self.input_schema
    }

    /// The output schema as clients see it (`type: object`), or `None` for `()` and
    /// [`Contents`](crate::Contents) returns.
    pub fn output_schema(&self) -> Option<&Arc<Map<String, Value>>> {
        self.output_schema.as_ref()
    }

    /// Whether calls take an optional `site_id` that is checked against the server's site:
    /// unless `site = false`, or the ability's own input has a `site_id`.
    pub fn takes_site_id(&self) -> bool {
        self.takes_site_id
    }

    /// The input schema as a tool advertises it: [`input_schema`](Self::input_schema) plus
    /// the optional `site_id` where the ability [takes one](Self::takes_site_id).
    pub fn tool_input_schema(&self) -> &Arc<Map<String, Value>> {
        &self.tool_input_schema
    }

    /// The input schema a server lists: [`tool_input_schema`](Self::tool_input_schema) on a
    /// server with a site, [`input_schema`](Self::input_schema) on one without.
    pub(crate) fn listed_input_schema(&self, site: bool) -> &Arc<Map<String, Value>> {
        if site {
            &self.tool_input_schema
        } else {
            &self.input_schema
        }
    }

    /// Whether the input is wrapped under `input` on the wire.
    pub fn input_wrapped(&self) -> bool {
        matches!(self.input_shape, InputShape::Wrapped { .. })
    }

    /// Whether the output is wrapped under `result` on the wire.
    pub fn output_wrapped(&self) -> bool {
        self.output_wrapped
    }

    /// The Rust path of the function, e.g. `my_crate::posts::count_posts`; empty for an
    /// ability built at run time.
    pub fn rust_path(&self) -> &str {
        &self.rust_path
    }

    /// What the server must provide for this ability to run (the `State<T>` it takes).
    pub fn requirements(&self) -> &[Requirement] {
        &self.requires
    }

    /// Name order, then definition order for the duplicate-name error.
    pub(crate) fn sort_key(&self) -> (&str, &str, u32) {
        (&self.name, &self.file, self.line)
    }

    /// Where the ability is defined (or built), as `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl fmt::Debug for Ability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ability")
            .field("name", &self.name)
            .field("tool_name", &self.tool_name)
            .field("semantic", &self.semantic)
            .finish_non_exhaustive()
    }
}

/// Where an instrument keeps what it holds of one ability (the metrics: its series), set at
/// the first call it counts: the instrument's id, and what it keeps, typed by it. Per-call
/// work is then a comparison and a type check; another server's instrument finds its own by
/// name.
#[derive(Default)]
pub(crate) struct Slot(
    #[allow(dead_code, reason = "read by the metrics, when they are built")]
    pub(crate)  std::sync::OnceLock<(usize, Arc<dyn std::any::Any + Send + Sync>)>,
);

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Slot")
    }
}

/// The tool name of an ability built from `parts`, once the rules `#[ability]` checks at
/// compile time hold (for abilities built at run time): a valid name, and a resource's valid
/// URI template.
fn checked_tool_name(parts: &Parts) -> Result<String, RegistryError> {
    let invalid = || RegistryError::InvalidName {
        name: parts.name.to_string(),
        at: format!("{}:{}", parts.file, parts.line),
    };
    check_ability_name(&parts.name).map_err(|_| invalid())?;
    let tool_name = tool_name(&parts.name).ok_or_else(invalid)?;
    if let AbilityKind::Resource { uri, .. } = &parts.kind {
        template_variables(uri).map_err(|reason| RegistryError::InvalidUri {
            name: parts.name.to_string(),
            at: format!("{}:{}", parts.file, parts.line),
            uri: uri.to_string(),
            reason,
        })?;
    }
    Ok(tool_name)
}

/// The danger level a call of an ability of `semantic` named `name` has: the declared one,
/// else the semantic's default raised by its name, read as MCP-AQL names the operation
/// (`ops/purge-cache` is `ops_purge_cache`), so every surface decides alike.
fn danger_of(semantic: Semantic, declared: Option<Danger>, name: &str) -> Danger {
    let default = Danger::for_semantic(semantic);
    match (
        declared,
        Danger::from_name(&abilities_core::operation_name(name)),
    ) {
        (Some(declared), _) => declared,
        (None, Some((named, _))) if named > default => named,
        (None, _) => default,
    }
}

/// The validator of the input schema of an ability made of `parts` (none without input).
fn validator_of(
    parts: &Parts,
    schema: &Map<String, Value>,
) -> Result<Option<Validator>, RegistryError> {
    if matches!(parts.input, Input::None) {
        return Ok(None);
    }
    Validator::new(&Value::Object(schema.clone()))
        .map(Some)
        .map_err(|reason| RegistryError::InvalidSchema {
            name: parts.name.to_string(),
            at: format!("{}:{}", parts.file, parts.line),
            reason,
        })
}
