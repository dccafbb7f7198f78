//! Schema generation (schemars, JSON Schema 2020-12) and the wire transformation: object
//! schemas pass, everything else is wrapped under one key (`input` or `result`).

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};

use serde_json::{Map, Value, json};

/// The schema of a type as the ability's input (what it deserializes from), subschemas inlined.
pub(crate) fn input_schema_for<T: schemars::JsonSchema>() -> Schema {
    settings()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The schema of a type as the ability's output (what it serializes to), subschemas inlined.
pub(crate) fn output_schema_for<T: schemars::JsonSchema>() -> Schema {
    settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The schema of one named parameter's type, from the generator shared by all of them.
pub(crate) fn property_schema<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// One named parameter, as its object schema lists it.
pub(crate) struct Property<'p> {
    pub(crate) name: &'p str,
    /// Its type's schema from the shared generator; `None` for what is no property.
    pub(crate) schema: fn(&mut SchemaGenerator) -> Option<Schema>,
    pub(crate) description: Option<&'p str>,
    /// The property's `x-mcp-header`.
    pub(crate) header: Option<&'p str>,
    pub(crate) default: Option<fn() -> Value>,
}

/// The object schema of named parameters: one property each, required unless it has a
/// default or its type admits `null` (then a missing parameter is `null`, as `Option` wants).
pub(crate) fn object_schema<'p>(
    properties: impl IntoIterator<Item = Property<'p>>,
) -> Map<String, Value> {
    let mut generator = settings().for_deserialize().into_generator();
    let mut props = Map::new();
    let mut required = Vec::new();
    for property in properties {
        let Some(schema) = (property.schema)(&mut generator) else {
            continue;
        };
        let mut schema = clean(schema);
        if let Some(description) = property.description {
            schema.insert("description".to_owned(), Value::from(description));
        }
        if let Some(header) = property.header {
            schema.insert("x-mcp-header".to_owned(), Value::from(header));
        }
        match property.default {
            Some(default) => {
                schema.insert("default".to_owned(), default());
            }
            None if !admits_null(&schema) => required.push(Value::from(property.name)),
            None => {}
        }
        props.insert(property.name.to_owned(), Value::Object(schema));
    }
    let mut object = Map::new();
    object.insert("type".to_owned(), json!("object"));
    object.insert("properties".to_owned(), Value::Object(props));
    if !required.is_empty() {
        object.insert("required".to_owned(), Value::Array(required));
    }
    let defs = generator.take_definitions(true);
    if !defs.is_empty() {
        let mut defs = Value::Object(defs);
        drop_numeric_formats(&mut defs);
        no_type_arrays(&mut defs);
        object.insert("$defs".to_owned(), defs);
    }
    object
}

fn settings() -> SchemaSettings {
    // Many clients cannot follow `$ref`; schemars still emits one where a type is recursive.
    SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true)
}

/// Which side of a call a schema describes: it decides the wrap key, and what a schema that
/// accepts anything becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// Arguments: always an object on the wire, so an unconstrained schema is an object.
    Input,
    /// Results: can be anything, so an unconstrained schema is wrapped.
    Output,
}

impl Side {
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "result",
        }
    }
}

/// A schema as it goes on the wire.
#[derive(Debug)]
pub(crate) struct WireSchema {
    pub(crate) schema: Map<String, Value>,
    /// The original schema sits under [`Side::key`].
    pub(crate) wrapped: bool,
}

/// Remove top-level noise (`$schema`, `title`), turn boolean schemas into objects and drop
/// the numeric `format`s schemars adds (`uint64`, `int32`, `double`...): they are not JSON
/// Schema formats, strict validators (Ajv in the TypeScript SDK) warn about them on every
/// call, and the bounds they stand for are kept as `minimum` / `maximum`.
pub(crate) fn clean(schema: Schema) -> Map<String, Value> {
    let mut value = schema.to_value();
    drop_numeric_formats(&mut value);
    no_type_arrays(&mut value);
    let mut map = match value {
        Value::Object(map) => map,
        Value::Bool(false) => Map::from_iter([("not".to_owned(), json!({}))]),
        _ => Map::new(),
    };
    map.remove("$schema");
    map.remove("title");
    map
}

/// Replace every `"type": [..]` of several types (`Option<T>` gives `["string", "null"]`) by
/// `"anyOf": [{"type": ..}, ..]`, every other keyword left where it is: the same schema, in a
/// form every function-calling API accepts (Gemini refuses type arrays, the Inspector's strict
/// mode warns on them). A schema that has its own `anyOf` keeps its array.
pub(crate) fn no_type_arrays(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let several = matches!(map.get("type"), Some(Value::Array(types)) if types.len() > 1);
            if several
                && !map.contains_key("anyOf")
                && let Some(Value::Array(types)) = map.remove("type")
            {
                let branches = types.into_iter().map(|t| json!({"type": t})).collect();
                map.insert("anyOf".to_owned(), Value::Array(branches));
            }
            map.values_mut().for_each(no_type_arrays);
        }
        Value::Array(items) => items.iter_mut().for_each(no_type_arrays),
        _ => {}
    }
}

fn drop_numeric_formats(value: &mut Value) {
    const NUMERIC: [&str; 14] = [
        "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
        "uint64", "uint128", "float", "double",
    ];
    match value {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| NUMERIC.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(drop_numeric_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_numeric_formats),
        _ => {}
    }
}

/// Apply the wire contract: a schema that describes an object passes (gaining `"type":
/// "object"` and `properties` if it lacks them); any other schema is wrapped as
/// `{type: object, properties: {<key>: S}, required: [<key>]}` with every keyword of `S` kept.
pub(crate) fn to_wire(mut schema: Map<String, Value>, side: Side) -> WireSchema {
    if describes_object(&schema, &schema, side, 0) {
        schema.entry("type").or_insert_with(|| json!("object"));
        schema.entry("properties").or_insert_with(|| json!({}));
        return WireSchema {
            schema,
            wrapped: false,
        };
    }
    let key = side.key();
    // Definitions of recursive types stay at the root, where `#/$defs/...` points.
    let defs = schema.remove("$defs");
    let mut inner = Value::Object(schema);
    retarget_root_refs(&mut inner, &format!("#/properties/{key}"));
    let mut wrapper = Map::new();
    wrapper.insert("type".to_owned(), json!("object"));
    wrapper.insert("properties".to_owned(), json!({ key: inner }));
    wrapper.insert("required".to_owned(), json!([key]));
    if let Some(defs) = defs {
        wrapper.insert("$defs".to_owned(), defs);
    }
    WireSchema {
        schema: wrapper,
        wrapped: true,
    }
}

/// The schema wrapped under `key` inside a wire schema made by [`to_wire`].
pub(crate) fn wrapped_inner_mut<'a>(
    wire: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    wire.get_mut("properties")?.get_mut(key)?.as_object_mut()
}

/// Does the schema only admit JSON objects (or, for input, admit anything)?
///
/// Unlike a bare "no `type` means object" rule, a type-less union of strings is not mistaken
/// for an object: `anyOf`/`oneOf` count as objects only when every branch does.
fn describes_object(
    schema: &Map<String, Value>,
    root: &Map<String, Value>,
    side: Side,
    depth: u8,
) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => return t == "object",
        Some(Value::Array(types)) => return types.len() == 1 && types[0] == "object",
        Some(_) => return false,
        None => {}
    }
    if let Some(Value::String(reference)) = schema.get("$ref") {
        // A chain of references this long is a cycle; such a schema is not an object.
        return depth < 32
            && resolve(reference, root)
                .is_some_and(|target| describes_object(target, root, side, depth + 1));
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(union) {
            return !branches.is_empty()
                && branches.iter().all(|b| {
                    b.as_object()
                        .is_some_and(|b| describes_object(b, root, side, depth))
                });
        }
    }
    if let Some(Value::Array(all)) = schema.get("allOf")
        && all.iter().any(|b| {
            b.as_object()
                .is_some_and(|b| describes_object(b, root, side, depth))
        })
    {
        return true;
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.iter().all(Value::is_object);
    }
    if let Some(value) = schema.get("const") {
        return value.is_object();
    }
    const OBJECT_KEYWORDS: [&str; 7] = [
        "properties",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "required",
        "minProperties",
        "maxProperties",
    ];
    if OBJECT_KEYWORDS.iter().any(|k| schema.contains_key(*k)) {
        return true;
    }
    // Unconstrained: arguments are an object anyway; a result may be any value.
    side == Side::Input
}

fn resolve<'a>(reference: &str, root: &'a Map<String, Value>) -> Option<&'a Map<String, Value>> {
    if reference == "#" {
        return Some(root);
    }
    let pointer = reference.strip_prefix('#')?;
    let mut node = root;
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        node = node.get(&segment)?.as_object()?;
    }
    Some(node)
}

/// Point `{"$ref": "#"}` (a recursive root) at the schema's new home inside a wrapper.
fn retarget_root_refs(value: &mut Value, new_root: &str) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref" {
                    if let Value::String(r) = v {
                        if r == "#" {
                            *r = new_root.to_owned();
                        } else if let Some(rest) = r.strip_prefix("#/")
                            && !rest.starts_with("$defs/")
                        {
                            *r = format!("{new_root}/{rest}");
                        }
                    }
                } else {
                    retarget_root_refs(v, new_root);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| retarget_root_refs(v, new_root)),
        _ => {}
    }
}

/// Does the schema admit `null`?
pub(crate) fn admits_null(schema: &Map<String, Value>) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(types)) if types.iter().any(|t| t == "null") => return true,
        Some(_) => return false,
        None => {}
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(union) {
            return branches
                .iter()
                .any(|b| b.as_object().is_some_and(admits_null));
        }
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.iter().any(Value::is_null);
    }
    if let Some(value) = schema.get("const") {
        return value.is_null();
    }
    // References and compositions are taken to exclude null; a schema with none of these
    // keywords (`{}`, `serde_json::Value`) accepts anything.
    !["$ref", "allOf", "not", "if"]
        .iter()
        .any(|k| schema.contains_key(*k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(schema: Value, side: Side) -> (Value, bool) {
        let Value::Object(map) = schema else {
            panic!("test schema must be an object")
        };
        let w = to_wire(map, side);
        (Value::Object(w.schema), w.wrapped)
    }

    #[test]
    fn object_passes_and_gains_properties() {
        let (s, wrapped) = wire(json!({"type": "object"}), Side::Input);
        assert!(!wrapped);
        assert_eq!(s, json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn missing_type_with_object_keywords_gets_object() {
        let (s, wrapped) = wire(
            json!({"properties": {"a": {"type": "string"}}}),
            Side::Output,
        );
        assert!(!wrapped);
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
    }

    #[test]
    fn scalar_is_wrapped_with_every_keyword() {
        let inner =
            json!({"type": "integer", "minimum": 0, "description": "n", "format": "uint64"});
        let (s, wrapped) = wire(inner.clone(), Side::Output);
        assert!(wrapped);
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"result": inner}, "required": ["result"]})
        );
    }

    #[test]
    fn nullable_object_and_unions_are_wrapped() {
        assert!(wire(json!({"type": ["object", "null"]}), Side::Input).1);
        assert!(
            wire(
                json!({"anyOf": [{"type": "string"}, {"type": "object"}]}),
                Side::Input
            )
            .1
        );
        assert!(
            !wire(
                json!({"oneOf": [{"type": "object"}, {"properties": {}}]}),
                Side::Input
            )
            .1
        );
    }

    #[test]
    fn unconstrained_schema_depends_on_side() {
        assert!(!wire(json!({}), Side::Input).1);
        assert!(wire(json!({}), Side::Output).1);
    }

    #[test]
    fn recursive_root_refs_follow_the_wrap() {
        let (s, _) = wire(
            json!({"type": "array", "items": {"$ref": "#"}, "$defs": {"X": {"type": "string"}}}),
            Side::Output,
        );
        assert_eq!(
            s["properties"]["result"]["items"]["$ref"],
            "#/properties/result"
        );
        assert_eq!(s["$defs"]["X"], json!({"type": "string"}));
    }

    #[test]
    fn null_admission() {
        assert!(admits_null(
            json!({"type": ["integer", "null"]})
                .as_object()
                .unwrap_or(&Map::new())
        ));
        assert!(admits_null(
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
                .as_object()
                .unwrap_or(&Map::new())
        ));
        assert!(!admits_null(
            json!({"type": "string"}).as_object().unwrap_or(&Map::new())
        ));
    }
}
