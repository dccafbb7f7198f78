//! A JSON Schema (2020-12) compiled once, at registration, into a tree of keywords the
//! [walk](super::walk) checks values against. Covers what Rust types derive and what people
//! write by hand: types, `enum`/`const`, numeric and length bounds, `pattern`, arrays
//! (`items`, `prefixItems`, `contains`, `uniqueItems`), objects (`properties`, `required`,
//! `additionalProperties`, `patternProperties`, `propertyNames`, `dependentRequired`,
//! `dependentSchemas`, `unevaluatedProperties`), `unevaluatedItems`, `allOf`/`anyOf`/`oneOf`/
//! `not`, `if`/`then`/`else`, and `$ref` to a JSON pointer, an `$anchor` or a `$dynamicAnchor`
//! of the same document. `format` and the annotations are not assertions and are not checked.
//! A `$schema` other than 2020-12's own meta-schema (another draft, or a meta-schema with
//! other vocabularies) is not read, so such a schema is refused.
//!
//! A keyword this does not check is never skipped: the schema is refused as
//! [`Problem::Unsupported`] (the `jsonschema` feature checks those schemas instead).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::keyword::{Compiled, JsonType, Keyword, Node};
use super::pattern::Pattern;
use super::walk::escape;

/// Why a schema was not compiled.
#[derive(Debug)]
pub(crate) enum Problem {
    /// The schema is malformed: a keyword's value is not what JSON Schema allows.
    Invalid(String),
    /// The schema is well formed but asks for something the built-in validator does not check.
    Unsupported(String),
}

/// Keywords of JSON Schema 2020-12 with assertions the built-in validator does not make.
const UNSUPPORTED: [&str; 4] = [
    "$dynamicRef",
    "$recursiveRef",
    // Draft 7's, which 2020-12 replaced (`dependentRequired`/`dependentSchemas`, `prefixItems`):
    // a schema written for draft 7 expects them checked.
    "dependencies",
    "additionalItems",
];

impl Compiled {
    /// Compile `schema`, the root of its document.
    pub(crate) fn new(schema: &Value) -> Result<Self, Problem> {
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            done: HashMap::new(),
            anchors: HashMap::new(),
        };
        compiler.scan(schema, String::new(), true)?;
        compiler.compile(schema, String::new())?;
        let unevaluated = compiler.nodes.iter().any(|node| {
            matches!(node, Node::Keywords(keywords) if keywords.iter().any(|k| matches!(
                k,
                Keyword::UnevaluatedProperties { .. } | Keyword::UnevaluatedItems { .. }
            )))
        });
        let compiled = Self {
            nodes: compiler.nodes,
            unevaluated,
        };
        compiled.refuse_loops()?;
        Ok(compiled)
    }

    /// Refuse a schema whose references loop back to themselves on one value (`{"$ref":
    /// "#"}`, `{"allOf": [{"$ref": "#"}]}`): checking a value would never end. A loop through
    /// `properties` or `items` is a recursive type and ends with the value.
    fn refuse_loops(&self) -> Result<(), Problem> {
        // 0: not visited, 1: on the current path, 2: done.
        let mut state = vec![0u8; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if state[start] != 0 {
                continue;
            }
            state[start] = 1;
            let mut stack = vec![(start, 0)];
            while let Some((node, next)) = stack.pop() {
                let Some(&child) = self.same_value(node).get(next) else {
                    state[node] = 2;
                    continue;
                };
                stack.push((node, next + 1));
                match state[child] {
                    0 => {
                        state[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => {
                        return Err(Problem::Invalid(
                            "a `$ref` loops back to a schema that applies to the same value, \
                             without ever reaching a value inside it"
                                .to_owned(),
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The subschemas a node applies to the value it is given (not to a value inside it).
    fn same_value(&self, node: usize) -> Vec<usize> {
        let Node::Keywords(keywords) = &self.nodes[node] else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for keyword in keywords {
            match keyword {
                Keyword::Ref(n) | Keyword::Not(n) => out.push(*n),
                Keyword::AllOf(ns) | Keyword::AnyOf(ns) | Keyword::OneOf(ns) => {
                    out.extend(ns.iter().copied());
                }
                Keyword::DependentSchemas(members) => out.extend(members.iter().map(|(_, n)| *n)),
                Keyword::If {
                    test,
                    then,
                    otherwise,
                } => {
                    out.push(*test);
                    out.extend(then.iter().chain(otherwise).copied());
                }
                _ => {}
            }
        }
        out
    }
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// Node of each schema already compiled, by its JSON pointer in the document.
    done: HashMap<String, usize>,
    /// Pointer of each `$anchor`.
    anchors: HashMap<String, String>,
}

/// The meta-schema whose vocabularies the built-in validator checks: 2020-12's own.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Keywords whose value is one subschema.
const ONE: [&str; 10] = [
    "unevaluatedProperties",
    "unevaluatedItems",
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];

impl Compiler<'_> {
    /// Find the `$anchor`s, and refuse an embedded resource (a nested `$id`), whose
    /// references resolve against another base.
    fn scan(&mut self, schema: &Value, at: String, root: bool) -> Result<(), Problem> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if !root && map.contains_key("$id") {
            return Err(Problem::Unsupported(format!(
                "`$id` at {} (an embedded schema resource)",
                place(&at)
            )));
        }
        match map.get("$schema") {
            None => {}
            Some(Value::String(uri)) if uri.strip_suffix('#').unwrap_or(uri) == DIALECT => {}
            Some(Value::String(uri)) => {
                return Err(Problem::Unsupported(format!(
                    "`$schema` `{uri}` at {} (only 2020-12's own meta-schema, `{DIALECT}`, \
                     whose vocabularies it checks)",
                    place(&at)
                )));
            }
            Some(_) => return Err(invalid(&at, "`$schema` must be a string".to_owned())),
        }
        // A `$dynamicAnchor` is also a plain-name fragment, which a `$ref` may name: one name
        // names one schema.
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(anchor)) = map.get(key)
                && let Some(other) = self.anchors.insert(anchor.clone(), at.clone())
                && other != at
            {
                return Err(invalid(
                    &at,
                    format!(
                        "the anchor `{anchor}` also names the schema at {}",
                        place(&other)
                    ),
                ));
            }
        }
        for (key, value) in map {
            let here = format!("{at}/{}", escape(key));
            match key.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" | "$defs"
                | "definitions" => {
                    if let Value::Object(members) = value {
                        for (name, sub) in members {
                            self.scan(sub, format!("{here}/{}", escape(name)), false)?;
                        }
                    }
                }
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    if let Value::Array(items) = value {
                        for (i, sub) in items.iter().enumerate() {
                            self.scan(sub, format!("{here}/{i}"), false)?;
                        }
                    }
                }
                key if ONE.contains(&key) => self.scan(value, here, false)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn compile(&mut self, schema: &Value, at: String) -> Result<usize, Problem> {
        if let Some(&id) = self.done.get(&at) {
            return Ok(id);
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Always(true));
        self.done.insert(at.clone(), id);
        self.nodes[id] = match schema {
            Value::Bool(b) => Node::Always(*b),
            Value::Object(map) => Node::Keywords(self.keywords(map, &at, id)?),
            other => {
                return Err(invalid(
                    &at,
                    format!("a schema is an object or a boolean, not {other}"),
                ));
            }
        };
        Ok(id)
    }

    fn sub(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<Option<usize>, Problem> {
        match map.get(key) {
            None => Ok(None),
            Some(schema) => self
                .compile(schema, format!("{at}/{}", escape(key)))
                .map(Some),
        }
    }

    fn list(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<Option<Vec<usize>>, Problem> {
        let Some(value) = map.get(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(invalid(at, format!("`{key}` must be an array of schemas")));
        };
        if items.is_empty() && key != "prefixItems" {
            return Err(invalid(at, format!("`{key}` must not be empty")));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, schema)| self.compile(schema, format!("{at}/{key}/{i}")))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    fn members(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        key: &str,
    ) -> Result<Option<Vec<(String, usize)>>, Problem> {
        let Some(value) = map.get(key) else {
            return Ok(None);
        };
        let Value::Object(members) = value else {
            return Err(invalid(at, format!("`{key}` must be an object of schemas")));
        };
        members
            .iter()
            .map(|(name, schema)| {
                self.compile(schema, format!("{at}/{key}/{}", escape(name)))
                    .map(|id| (name.clone(), id))
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// The keywords of node `id`, the schema `map` at `at`.
    fn keywords(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        id: usize,
    ) -> Result<Vec<Keyword>, Problem> {
        if let Some(key) = UNSUPPORTED.iter().find(|k| map.contains_key(**k)) {
            return Err(Problem::Unsupported(format!("`{key}` at {}", place(at))));
        }
        let mut out = Vec::new();
        if let Some(reference) = map.get("$ref") {
            let Value::String(reference) = reference else {
                return Err(invalid(at, "`$ref` must be a string".to_owned()));
            };
            out.push(Keyword::Ref(self.reference(reference, at)?));
        }
        if let Some(types) = map.get("type") {
            let names: Vec<&Value> = match types {
                Value::Array(names) if !names.is_empty() => names.iter().collect(),
                Value::String(_) => vec![types],
                _ => {
                    return Err(invalid(
                        at,
                        format!(
                            "`type` must be a type name or a non-empty array of them, not {types}"
                        ),
                    ));
                }
            };
            let types: Vec<JsonType> = names
                .into_iter()
                .map(|name| {
                    name.as_str().and_then(JsonType::parse).ok_or_else(|| {
                        invalid(at, format!("`type` {name} is none of null, boolean, object, array, number, string, integer"))
                    })
                })
                .collect::<Result<_, _>>()?;
            if types
                .iter()
                .enumerate()
                .any(|(i, t)| types[..i].contains(t))
            {
                return Err(invalid(at, "`type` names a type twice".to_owned()));
            }
            out.push(Keyword::Type(types));
        }
        if let Some(value) = map.get("const") {
            out.push(Keyword::Const(value.clone()));
        }
        if let Some(values) = map.get("enum") {
            let Value::Array(values) = values else {
                return Err(invalid(at, "`enum` must be an array".to_owned()));
            };
            out.push(Keyword::Enum {
                options: values.clone(),
                quoted: super::walk::quote(&Value::Array(values.clone())),
            });
        }
        for (key, make) in [
            ("minimum", Keyword::Minimum as fn(Number) -> Keyword),
            ("maximum", Keyword::Maximum),
            ("exclusiveMinimum", Keyword::ExclusiveMinimum),
            ("exclusiveMaximum", Keyword::ExclusiveMaximum),
        ] {
            if let Some(value) = map.get(key) {
                let Value::Number(n) = value else {
                    return Err(invalid(at, format!("`{key}` must be a number")));
                };
                out.push(make(n.clone()));
            }
        }
        if let Some(value) = map.get("multipleOf") {
            match value {
                Value::Number(n) if n.as_f64().is_some_and(|f| f > 0.0) => {
                    out.push(Keyword::MultipleOf(n.clone()));
                }
                _ => {
                    return Err(invalid(
                        at,
                        "`multipleOf` must be a number above zero".to_owned(),
                    ));
                }
            }
        }
        if let Some(n) = count(map, at, "minLength")? {
            out.push(Keyword::MinLength(n));
        }
        if let Some(n) = count(map, at, "maxLength")? {
            out.push(Keyword::MaxLength(n));
        }
        if let Some(value) = map.get("pattern") {
            let Value::String(source) = value else {
                return Err(invalid(at, "`pattern` must be a string".to_owned()));
            };
            out.push(Keyword::Pattern(pattern(source, at)?));
        }
        let prefix = self.list(map, at, "prefixItems")?;
        let from = prefix.as_ref().map_or(0, Vec::len);
        if let Some(nodes) = prefix {
            out.push(Keyword::PrefixItems(nodes));
        }
        if map.get("items").is_some_and(Value::is_array) {
            return Err(invalid(
                at,
                "`items` must be a schema (an array of them is `prefixItems` in 2020-12)"
                    .to_owned(),
            ));
        }
        if let Some(node) = self.sub(map, at, "items")? {
            out.push(Keyword::Items { node, from });
        }
        if let Some(n) = count(map, at, "minItems")? {
            out.push(Keyword::MinItems(n));
        }
        if let Some(n) = count(map, at, "maxItems")? {
            out.push(Keyword::MaxItems(n));
        }
        match map.get("uniqueItems") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => out.push(Keyword::UniqueItems),
            Some(_) => return Err(invalid(at, "`uniqueItems` must be a boolean".to_owned())),
        }
        if let Some(node) = self.sub(map, at, "contains")? {
            out.push(Keyword::Contains {
                node,
                min: count(map, at, "minContains")?.unwrap_or(1),
                max: count(map, at, "maxContains")?,
            });
        }
        if let Some(names) = map.get("required") {
            out.push(Keyword::Required(strings(names).ok_or_else(|| {
                invalid(at, "`required` must be an array of strings".to_owned())
            })?));
        }
        let properties = self.members(map, at, "properties")?;
        let named: Vec<String> = properties
            .iter()
            .flatten()
            .map(|(name, _)| name.clone())
            .collect();
        if let Some(properties) = properties {
            out.push(Keyword::Properties(properties));
        }
        let mut patterns = Vec::new();
        if let Some(members) = self.members(map, at, "patternProperties")? {
            let mut compiled = Vec::new();
            for (source, node) in members {
                let p = pattern(&source, at)?;
                patterns.push(p.clone());
                compiled.push((p, node));
            }
            out.push(Keyword::PatternProperties(compiled));
        }
        if let Some(node) = self.sub(map, at, "additionalProperties")? {
            out.push(Keyword::AdditionalProperties {
                node,
                named,
                patterns,
            });
        }
        if let Some(node) = self.sub(map, at, "unevaluatedProperties")? {
            out.push(Keyword::UnevaluatedProperties { node, owner: id });
        }
        if let Some(node) = self.sub(map, at, "unevaluatedItems")? {
            out.push(Keyword::UnevaluatedItems { node, owner: id });
        }
        if let Some(node) = self.sub(map, at, "propertyNames")? {
            out.push(Keyword::PropertyNames(node));
        }
        if let Some(n) = count(map, at, "minProperties")? {
            out.push(Keyword::MinProperties(n));
        }
        if let Some(n) = count(map, at, "maxProperties")? {
            out.push(Keyword::MaxProperties(n));
        }
        if let Some(value) = map.get("dependentRequired") {
            let dependencies = value
                .as_object()
                .and_then(|members| {
                    members
                        .iter()
                        .map(|(name, names)| strings(names).map(|names| (name.clone(), names)))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| {
                    invalid(
                        at,
                        "`dependentRequired` must map names to arrays of strings".to_owned(),
                    )
                })?;
            out.push(Keyword::DependentRequired(dependencies));
        }
        if let Some(members) = self.members(map, at, "dependentSchemas")? {
            out.push(Keyword::DependentSchemas(members));
        }
        if let Some(nodes) = self.list(map, at, "allOf")? {
            out.push(Keyword::AllOf(nodes));
        }
        if let Some(nodes) = self.list(map, at, "anyOf")? {
            out.push(Keyword::AnyOf(nodes));
        }
        if let Some(nodes) = self.list(map, at, "oneOf")? {
            out.push(Keyword::OneOf(nodes));
        }
        if let Some(node) = self.sub(map, at, "not")? {
            out.push(Keyword::Not(node));
        }
        // `then` and `else` without `if` are annotations.
        if let Some(test) = self.sub(map, at, "if")? {
            out.push(Keyword::If {
                test,
                then: self.sub(map, at, "then")?,
                otherwise: self.sub(map, at, "else")?,
            });
        }
        Ok(out)
    }

    /// The node a `$ref` names: a JSON pointer into this document (`#`, `#/$defs/x`) or one
    /// of its `$anchor`s (`#name`).
    fn reference(&mut self, reference: &str, at: &str) -> Result<usize, Problem> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(Problem::Unsupported(format!(
                "`$ref` to `{reference}` at {} (another document)",
                place(at)
            )));
        };
        let pointer = if fragment.is_empty() || fragment.starts_with('/') {
            abilities_core::percent_decode(fragment).ok_or_else(|| {
                invalid(
                    at,
                    format!("`$ref` `{reference}` is not a valid URI fragment"),
                )
            })?
        } else {
            self.anchors.get(fragment).cloned().ok_or_else(|| {
                invalid(
                    at,
                    format!(
                        "`$ref` `{reference}` names no `$anchor` or `$dynamicAnchor` of this schema"
                    ),
                )
            })?
        };
        let root = self.root;
        let target = root
            .pointer(&pointer)
            .ok_or_else(|| invalid(at, format!("`$ref` `{reference}` points at nothing")))?;
        self.compile(target, pointer)
    }
}

fn invalid(at: &str, what: String) -> Problem {
    Problem::Invalid(format!("at {}: {what}", place(at)))
}

/// A schema's JSON pointer in words: `` `/properties/a` ``, or "the root".
fn place(at: &str) -> String {
    if at.is_empty() {
        "the root".to_owned()
    } else {
        format!("`{at}`")
    }
}

/// A non-negative integer keyword (`minLength`, `maxItems`, ...).
fn count(map: &Map<String, Value>, at: &str, key: &str) -> Result<Option<u64>, Problem> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| invalid(at, format!("`{key}` must be a non-negative integer"))),
        Some(_) => Err(invalid(
            at,
            format!("`{key}` must be a non-negative integer"),
        )),
    }
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|name| name.as_str().map(str::to_owned))
        .collect()
}

/// Compile a `pattern` (or a `patternProperties` key) found at `at`.
fn pattern(source: &str, at: &str) -> Result<Pattern, Problem> {
    super::pattern::pattern(source).map_err(|why| {
        Problem::Unsupported(format!("the pattern `{source}` at {} ({why})", place(at)))
    })
}
