//! The registry: every `#[ability]` of the program, collected once, with schemas derived and
//! validators compiled at build time so calls do no schema work.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Map, Value};

use crate::ability::{AbilityDef, AbilityKind, Annotations, Completer, Danger, InputDef, Semantic};
use crate::normalize::InputShape;
use crate::resource::UriTemplate;
use crate::schema::{self, Side};
use crate::{RegistryError, tool_name};

/// Every ability of the program, sorted by name, ready to list and call.
///
/// ```standalone_crate
/// use abilities::{Context, Registry, ability};
/// use serde_json::json;
///
/// /// Add two numbers.
/// #[ability(semantic = "READ")]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::collect().unwrap();
/// let out = registry.call(Context::new(), "add", json!({"a": 2, "b": 40})).await.unwrap();
/// assert_eq!(out, json!({"result": 42}));
/// # });
/// ```
pub struct Registry {
    abilities: Vec<Ability>,
    index: HashMap<String, usize>,
}

impl Registry {
    /// Build the registry from every ability linked into the program.
    ///
    /// Fails on duplicate ability names, tool-name collisions and schemas that do not compile,
    /// naming the definitions involved by `file:line`.
    pub fn collect() -> Result<Self, RegistryError> {
        Self::from_defs(inventory::iter::<AbilityDef>)
    }

    /// Every ability defined in the module `path` or below it (`my_app::posts`), to serve a
    /// part of a program. Fails like [`collect`](Self::collect).
    pub fn collect_in(path: &str) -> Result<Self, RegistryError> {
        Self::from_defs(inventory::iter::<AbilityDef>.into_iter().filter(|def| {
            def.rust_path
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with("::"))
        }))
    }

    /// Build a registry from chosen definitions (tests, or serving a subset).
    #[doc(hidden)]
    pub fn from_defs(
        defs: impl IntoIterator<Item = &'static AbilityDef>,
    ) -> Result<Self, RegistryError> {
        let mut defs: Vec<&'static AbilityDef> = defs.into_iter().collect();
        defs.sort_by(|a, b| (a.name, a.file, a.line).cmp(&(b.name, b.file, b.line)));
        let mut abilities: Vec<Ability> = Vec::with_capacity(defs.len());
        let mut index: HashMap<String, usize> = HashMap::with_capacity(defs.len() * 2);
        for def in defs {
            if let Some(prev) = abilities.last().filter(|a| a.def.name == def.name) {
                return Err(RegistryError::DuplicateAbility {
                    name: def.name.to_owned(),
                    first: prev.def.location(),
                    second: def.location(),
                });
            }
            let ability = Ability::build(def)?;
            let slot = abilities.len();
            for key in [ability.tool_name.clone(), def.name.to_owned()] {
                if let Some(&other) = index.get(&key) {
                    let other = &abilities[other];
                    return Err(RegistryError::ToolNameCollision {
                        tool: ability.tool_name.clone(),
                        first_name: other.def.name.to_owned(),
                        first: other.def.location(),
                        second_name: def.name.to_owned(),
                        second: def.location(),
                    });
                }
                index.insert(key, slot);
                if ability.tool_name == def.name {
                    break;
                }
            }
            if let AbilityKind::Resource { uri, .. } = def.kind
                && let Some(other) = abilities.iter().find(
                    |a| matches!(a.def.kind, AbilityKind::Resource { uri: u, .. } if u == uri),
                )
            {
                return Err(RegistryError::DuplicateResource {
                    uri: uri.to_owned(),
                    first: format!("`{}` ({})", other.def.name, other.def.location()),
                    second: format!("`{}` ({})", def.name, def.location()),
                });
            }
            abilities.push(ability);
        }
        Ok(Self { abilities, index })
    }

    /// The ability with this ability name (`my-plugin/count-posts`) or tool name
    /// (`my-plugin-count-posts`). The two never clash: a clash is a build error.
    pub fn get(&self, name: &str) -> Option<&Ability> {
        self.index.get(name).map(|&i| &self.abilities[i])
    }

    /// The ability at `index` in name order.
    pub(crate) fn at(&self, index: usize) -> Option<&Ability> {
        self.abilities.get(index)
    }

    /// All abilities, sorted by name.
    pub fn iter(&self) -> std::slice::Iter<'_, Ability> {
        self.abilities.iter()
    }

    /// How many abilities there are.
    pub fn len(&self) -> usize {
        self.abilities.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.abilities.is_empty()
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a Ability;
    type IntoIter = std::slice::Iter<'a, Ability>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.abilities.iter().map(|a| a.def.name))
            .finish()
    }
}

/// One registered ability: its definition, wire schemas and compiled validator.
pub struct Ability {
    pub(crate) def: &'static AbilityDef,
    tool_name: String,
    input_schema: Arc<Map<String, Value>>,
    tool_input_schema: Arc<Map<String, Value>>,
    takes_site_id: bool,
    output_schema: Option<Arc<Map<String, Value>>>,
    pub(crate) input_shape: InputShape,
    pub(crate) output_wrapped: bool,
    pub(crate) validator: Option<Validator>,
    annotations: Annotations,
    pub(crate) arguments: Vec<Argument>,
    pub(crate) template: Option<UriTemplate>,
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

impl Ability {
    fn build(def: &'static AbilityDef) -> Result<Self, RegistryError> {
        let tool_name = tool_name(def.name).ok_or_else(|| RegistryError::InvalidName {
            name: def.name.to_owned(),
            at: def.location(),
        })?;
        let (input_schema, input_shape) = input_schema(def);
        let validator = match def.input {
            InputDef::None => None,
            _ => Some(
                jsonschema::draft202012::new(&Value::Object(input_schema.clone())).map_err(
                    |e| RegistryError::InvalidSchema {
                        name: def.name.to_owned(),
                        at: def.location(),
                        reason: e.to_string(),
                    },
                )?,
            ),
        };
        let (output_schema, output_wrapped) = match (def.output)() {
            None => (None, false),
            Some(output) => {
                let wire = schema::to_wire(schema::clean(output), Side::Output);
                (Some(Arc::new(wire.schema)), wire.wrapped)
            }
        };
        let declares_site_id = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.contains_key(crate::pipeline::SITE_ID));
        let takes_site_id = def.site && !declares_site_id;
        let mut tool_input_schema = input_schema.clone();
        if takes_site_id
            && let Some(Value::Object(properties)) = tool_input_schema.get_mut("properties")
        {
            properties.insert(
                crate::pipeline::SITE_ID.to_owned(),
                serde_json::json!({
                    "type": "string",
                    "description": "Optional: the site this call is meant for; a call naming another site is rejected."
                }),
            );
        }
        let arguments = arguments(
            def,
            &input_schema,
            matches!(input_shape, InputShape::Wrapped { .. }),
        );
        let template = match def.kind {
            AbilityKind::Resource { uri, .. } => UriTemplate::parse(uri),
            _ => None,
        };
        let input_schema = Arc::new(input_schema);
        let tool_input_schema = if takes_site_id {
            Arc::new(tool_input_schema)
        } else {
            Arc::clone(&input_schema)
        };
        Ok(Self {
            def,
            tool_name,
            input_schema,
            tool_input_schema,
            takes_site_id,
            output_schema,
            input_shape,
            output_wrapped,
            validator,
            annotations: Annotations::for_semantic(def.semantic).overridden_by(def.annotations),
            arguments,
            template,
        })
    }

    /// The MCP-AQL endpoint family named by `family = "..."`, if any.
    pub fn family(&self) -> Option<&'static str> {
        self.def.family
    }

    /// The MCP-AQL danger level: `danger = "..."`, else the semantic's default.
    pub fn danger(&self) -> Danger {
        self.def
            .danger
            .unwrap_or_else(|| Danger::for_semantic(self.def.semantic))
    }

    /// Whether it is served as a tool, a resource or a prompt.
    pub fn kind(&self) -> AbilityKind {
        self.def.kind
    }

    /// The ability name, e.g. `my-plugin/count-posts`.
    pub fn name(&self) -> &'static str {
        self.def.name
    }

    /// The MCP tool name, e.g. `my-plugin-count-posts`.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// A human-readable title.
    pub fn title(&self) -> Option<&'static str> {
        self.def.title
    }

    /// What the ability does (defaults to the function's doc comment).
    pub fn description(&self) -> &'static str {
        self.def.description
    }

    /// The ability's category.
    pub fn category(&self) -> Option<&'static str> {
        self.def.category
    }

    /// Its semantic.
    pub fn semantic(&self) -> Semantic {
        self.def.semantic
    }

    /// The scope a caller needs.
    pub fn permission(&self) -> Option<&'static str> {
        self.def.permission
    }

    /// Whether the ability is listed on public surfaces (`public = false` hides it).
    pub fn is_public(&self) -> bool {
        self.def.public
    }

    /// Whether calls are checked against the server's site identity (`site = false` opts out).
    pub fn checks_site(&self) -> bool {
        self.def.site
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

    /// Whether the input is wrapped under `input` on the wire.
    pub fn input_wrapped(&self) -> bool {
        matches!(self.input_shape, InputShape::Wrapped { .. })
    }

    /// Whether the output is wrapped under `result` on the wire.
    pub fn output_wrapped(&self) -> bool {
        self.output_wrapped
    }

    /// The Rust path of the function, e.g. `my_crate::posts::count_posts`.
    pub fn rust_path(&self) -> &'static str {
        self.def.rust_path
    }

    /// Where the ability is defined, as `file:line`.
    pub fn location(&self) -> String {
        self.def.location()
    }
}

impl fmt::Debug for Ability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ability")
            .field("name", &self.def.name)
            .field("tool_name", &self.tool_name)
            .field("semantic", &self.def.semantic)
            .finish_non_exhaustive()
    }
}

/// The arguments of a prompt or resource template: the properties of the wire input.
fn arguments(def: &AbilityDef, wire: &Map<String, Value>, wrapped: bool) -> Vec<Argument> {
    let required: Vec<&str> = wire
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = wire.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let complete = match def.input {
                InputDef::Object { properties } => properties
                    .iter()
                    .find(|p| p.name == name)
                    .and_then(|p| p.complete),
                // The completer of a flattened value completes its `input` argument.
                InputDef::Flattened { complete, .. } if wrapped => complete,
                InputDef::Flattened { .. } => None,
                InputDef::None => None,
            };
            Argument {
                name: name.clone(),
                description: schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: required.contains(&name.as_str()),
                schema: schema.clone(),
                complete,
            }
        })
        .collect()
}

fn input_schema(def: &AbilityDef) -> (Map<String, Value>, InputShape) {
    match def.input {
        InputDef::None => {
            let wire = schema::to_wire(Map::new(), Side::Input);
            (wire.schema, InputShape::None)
        }
        InputDef::Object { properties } => (
            schema::object_schema(properties),
            InputShape::Object { default: None },
        ),
        InputDef::Flattened {
            schema,
            default,
            description,
            ..
        } => {
            let mut inner = schema::clean(schema());
            let default = default.map(|f| f());
            if let Some(description) = description {
                inner.insert("description".to_owned(), Value::from(description));
            }
            if let Some(default) = &default {
                inner.insert("default".to_owned(), default.clone());
            }
            let mut wire = schema::to_wire(inner, Side::Input);
            if !wire.wrapped {
                return (wire.schema, InputShape::Object { default });
            }
            let key = Side::Input.key();
            let nullable = schema::wrapped_inner_mut(&mut wire.schema, key)
                .is_some_and(|s| schema::admits_null(s));
            if default.is_some() || nullable {
                // The server fills the key in, so clients may leave it out.
                wire.schema.remove("required");
            }
            (
                wire.schema,
                InputShape::Wrapped {
                    key,
                    default,
                    nullable,
                },
            )
        }
    }
}
