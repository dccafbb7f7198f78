//! Schema profiles: how the input schemas of native tools are written for the model APIs
//! that read them.
//!
//! Every profile lists the same tools with the same meaning; a call is still validated
//! against the ability's own schema, so a constraint a profile cannot write down is still
//! enforced (and answered with a validation error naming it).

use serde_json::{Map, Value, json};

use crate::schema::admits_null;

/// How native tools' input schemas are written (see
/// [`ServerBuilder::schema_profile`](crate::ServerBuilder::schema_profile)).
///
/// ```
/// use abilities::{Server, config::SchemaProfile};
///
/// let server = Server::builder()
///     .schema_profile(SchemaProfile::OpenAiStrict)
///     .build()
///     .expect("every schema has a strict form");
/// # let _ = server;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaProfile {
    /// JSON Schema 2020-12 in the subset every major function-calling API accepts: no type
    /// arrays (`anyOf` instead), no `$schema`, no non-standard numeric `format`s, subschemas
    /// inlined where a type is not recursive.
    #[default]
    Portable,
    /// OpenAI's strict function calling (`"strict": true`): every object lists all its
    /// properties in `required` (an optional one becomes nullable, and `null` is read as
    /// absent), has `additionalProperties: false`, and keeps only the keywords strict mode
    /// supports (`oneOf` is written `anyOf`; `default`, `minLength`, `maxLength`,
    /// `uniqueItems`, `title`, `examples`... are left out of the listing, and still
    /// enforced). A schema strict mode cannot express (a map, any JSON value,
    /// `patternProperties`, `not`, `if`) fails [`build`](crate::ServerBuilder::build),
    /// naming the ability and where.
    OpenAiStrict,
}

/// Keywords strict mode rejects that only annotate or narrow: left out of the listing.
const STRICT_DROPPED: [&str; 20] = [
    "default",
    "examples",
    "title",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minLength",
    "maxLength",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords strict mode cannot express at all.
const STRICT_REFUSED: [&str; 8] = [
    "patternProperties",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "prefixItems",
];

/// The string formats strict mode supports.
const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Why a schema has no form in a profile.
#[derive(Debug)]
pub(crate) struct ProfileError {
    /// JSON Pointer into the listed input schema.
    pub(crate) pointer: String,
    pub(crate) problem: String,
}

/// `schema` (a listed input schema) as `profile` writes it.
pub(crate) fn apply(
    profile: SchemaProfile,
    schema: &Map<String, Value>,
) -> Result<Map<String, Value>, ProfileError> {
    match profile {
        SchemaProfile::Portable => Ok(schema.clone()),
        SchemaProfile::OpenAiStrict => {
            let mut value = Value::Object(schema.clone());
            strict(&mut value, "")?;
            match value {
                Value::Object(map) => Ok(map),
                _ => Err(ProfileError {
                    pointer: String::new(),
                    problem: "the input schema is not an object schema".to_owned(),
                }),
            }
        }
    }
}

fn refuse(pointer: &str, problem: impl Into<String>) -> ProfileError {
    ProfileError {
        pointer: if pointer.is_empty() {
            "/".to_owned()
        } else {
            pointer.to_owned()
        },
        problem: problem.into(),
    }
}

/// Rewrite one subschema (at `pointer`) in strict form.
fn strict(value: &mut Value, pointer: &str) -> Result<(), ProfileError> {
    let Value::Object(map) = value else {
        return match value {
            Value::Bool(true) => Err(refuse(pointer, "accepts any JSON value")),
            _ => Err(refuse(pointer, "is not a schema object")),
        };
    };
    if let Some(keyword) = STRICT_REFUSED.iter().find(|k| map.contains_key(**k)) {
        return Err(refuse(pointer, format!("uses `{keyword}`")));
    }
    for keyword in STRICT_DROPPED {
        map.remove(keyword);
    }
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !STRICT_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    match map.remove("allOf") {
        None => {}
        Some(Value::Array(mut parts)) if parts.len() == 1 && !map.contains_key("$ref") => {
            if let Some(Value::Object(part)) = parts.pop() {
                for (key, part_value) in part {
                    map.entry(key).or_insert(part_value);
                }
            }
        }
        Some(_) => return Err(refuse(pointer, "uses `allOf` of several schemas")),
    }
    if let Some(branches) = map.remove("oneOf") {
        if map.contains_key("anyOf") {
            return Err(refuse(pointer, "uses both `oneOf` and `anyOf`"));
        }
        map.insert("anyOf".to_owned(), branches);
    }
    distribute(map);
    let constrained = [
        "type",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "properties",
        "items",
    ]
    .iter()
    .any(|k| map.contains_key(*k));
    if !constrained {
        return Err(refuse(pointer, "accepts any JSON value"));
    }
    let object =
        map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if object {
        strict_object(map, pointer)?;
    }
    if let Some(items) = map.get_mut("items") {
        strict(items, &format!("{pointer}/items"))?;
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        for (i, branch) in branches.iter_mut().enumerate() {
            strict(branch, &format!("{pointer}/anyOf/{i}"))?;
        }
    }
    if let Some(Value::Object(defs)) = map.get_mut("$defs") {
        for (name, def) in defs.iter_mut() {
            strict(def, &format!("{pointer}/$defs/{}", escape(name)))?;
        }
    }
    Ok(())
}

/// Which keywords apply only to values of a JSON type (the numeric ones, to numbers and
/// integers, are handled apart).
fn applies_to(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "properties" | "required" | "additionalProperties" => "object",
        "items" | "minItems" | "maxItems" => "array",
        "pattern" | "format" => "string",
        _ => return None,
    })
}

/// `{"anyOf": [{"type": "object"}, {"type": "null"}], "properties": ..}` (a nullable object,
/// as the portable form writes `Option<T>`) with the object's keywords moved into its
/// branch: strict mode reads each branch alone.
fn distribute(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return;
    };
    let bare = branches.iter().all(|b| {
        b.as_object()
            .is_some_and(|b| b.len() == 1 && b.get("type").is_some_and(Value::is_string))
    });
    let numeric = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ];
    if !bare {
        return;
    }
    let moved: Vec<String> = map
        .keys()
        .filter(|k| applies_to(k).is_some() || numeric.contains(&k.as_str()))
        .cloned()
        .collect();
    if moved.is_empty() {
        return;
    }
    let mut taken: Vec<(String, Value)> = Vec::new();
    for key in moved {
        if let Some(value) = map.remove(&key) {
            taken.push((key, value));
        }
    }
    let Some(Value::Array(branches)) = map.get_mut("anyOf") else {
        return;
    };
    for branch in branches.iter_mut() {
        let Some(branch) = branch.as_object_mut() else {
            continue;
        };
        let ty = branch
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        for (key, value) in &taken {
            let fits = match applies_to(key) {
                Some(t) => t == ty,
                None => ty == "number" || ty == "integer",
            };
            if fits {
                branch.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Every property required (the optional ones nullable), nothing else admitted.
fn strict_object(map: &mut Map<String, Value>, pointer: &str) -> Result<(), ProfileError> {
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Object(extra)) if extra.get("not").is_some_and(|n| n == &json!({})) => {}
        Some(_) => {
            return Err(refuse(
                pointer,
                "admits properties it does not name (a map, or `additionalProperties`)",
            ));
        }
    }
    map.insert("type".to_owned(), json!("object"));
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let properties = map
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| refuse(pointer, "has `properties` that is not an object"))?;
    let mut names = Vec::with_capacity(properties.len());
    for (name, property) in properties.iter_mut() {
        let at = format!("{pointer}/properties/{}", escape(name));
        let optional = !required.iter().any(|r| r == name);
        // Whether the property admitted null before strict form: then `null` is a value, not
        // "absent".
        let nullable = property.as_object().is_none_or(admits_null);
        strict(property, &at)?;
        if optional && !nullable {
            *property = or_null(std::mem::take(property));
        }
        names.push(Value::String(name.clone()));
    }
    map.insert("required".to_owned(), Value::Array(names));
    Ok(())
}

/// `schema` or `null`, its description kept at the top.
fn or_null(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(json!({"type": "null"}));
        return Value::Object(map);
    }
    let description = map.remove("description");
    let mut wrapper = Map::new();
    wrapper.insert(
        "anyOf".to_owned(),
        json!([Value::Object(map), {"type": "null"}]),
    );
    if let Some(description) = description {
        wrapper.insert("description".to_owned(), description);
    }
    Value::Object(wrapper)
}

/// A JSON Pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The strict profile's reading of `null`: for a property `schema` makes optional and not
/// nullable, `null` means "absent" (strict clients send every property), at any depth of
/// `properties` and `items`.
pub(crate) fn strip_nulls(args: &mut Map<String, Value>, schema: &Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|n| n == name))
    };
    args.retain(|name, value| {
        let Some(Value::Object(property)) = properties.get(name) else {
            return true;
        };
        !(value.is_null() && !required(name) && !admits_null(property))
    });
    for (name, value) in args.iter_mut() {
        if let Some(Value::Object(property)) = properties.get(name) {
            strip_value(value, property);
        }
    }
}

fn strip_value(value: &mut Value, schema: &Map<String, Value>) {
    match value {
        Value::Object(map) if schema.contains_key("properties") => strip_nulls(map, schema),
        Value::Object(map) => {
            // A union (an enum with struct variants): the one object branch that names every
            // key sent. None or several, and the value is left for validation to judge.
            let fits = |branch: &&Map<String, Value>| {
                branch
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| map.keys().all(|k| p.contains_key(k)))
            };
            let branches: Vec<&Map<String, Value>> = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| schema.get(*k).and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_object)
                .filter(fits)
                .collect();
            if let [branch] = branches.as_slice() {
                strip_nulls(map, branch);
            }
        }
        Value::Array(items) => {
            if let Some(Value::Object(item)) = schema.get("items") {
                for value in items {
                    strip_value(value, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict_of(schema: Value) -> Result<Value, String> {
        let Value::Object(map) = schema else {
            return Err("not an object".to_owned());
        };
        apply(SchemaProfile::OpenAiStrict, &map)
            .map(Value::Object)
            .map_err(|e| format!("{}: {}", e.pointer, e.problem))
    }

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let out = strict_of(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1, "description": "The title."},
                "limit": {"type": "integer", "minimum": 1, "default": 10},
                "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "status": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["title"]
        }));
        assert_eq!(
            out,
            Ok(json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "The title."},
                    "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
                    "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "status": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]}
                },
                "required": ["title", "limit", "tag", "status"],
                "additionalProperties": false
            }))
        );
    }

    #[test]
    fn nested_objects_and_items_are_strict_too() {
        let out = strict_of(json!({
            "type": "object",
            "properties": {
                "posts": {"type": "array", "uniqueItems": true, "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "format": "uint64"},
                        "kind": {"oneOf": [
                            {"type": "string", "const": "a", "description": "A."},
                            {"type": "string", "const": "b", "title": "B"}
                        ]}
                    },
                    "required": ["kind"]
                }}
            }
        }));
        let posts = out.as_ref().map(|o| o["properties"]["posts"].clone());
        assert_eq!(
            posts,
            Ok(json!({"anyOf": [{"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    "kind": {"anyOf": [
                        {"type": "string", "const": "a", "description": "A."},
                        {"type": "string", "const": "b"}
                    ]}
                },
                "required": ["id", "kind"],
                "additionalProperties": false
            }}, {"type": "null"}]}))
        );
    }

    #[test]
    fn what_strict_mode_cannot_express_is_refused_with_where() {
        let map = json!({"type": "object", "properties": {
            "tags": {"type": "object", "additionalProperties": {"type": "string"}}
        }});
        assert_eq!(
            strict_of(map),
            Err("/properties/tags: admits properties it does not name (a map, or `additionalProperties`)".to_owned())
        );
        let any = json!({"type": "object", "properties": {"extra": {"description": "Anything."}}});
        assert_eq!(
            strict_of(any),
            Err("/properties/extra: accepts any JSON value".to_owned())
        );
        let pattern = json!({"type": "object", "properties": {}, "patternProperties": {"^x": {}}});
        assert_eq!(
            strict_of(pattern),
            Err("/: uses `patternProperties`".to_owned())
        );
    }

    #[test]
    fn null_reads_as_absent_only_where_strict_form_added_it() {
        let schema = json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer"},
                "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "need": {"type": "integer"},
                "inner": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            },
            "required": ["need"]
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let Value::Object(mut args) = json!({
            "limit": null, "tag": null, "need": null,
            "inner": {"n": null}, "list": [{"n": null}, {"n": 2}], "other": null
        }) else {
            unreachable!()
        };
        strip_nulls(&mut args, &schema);
        assert_eq!(
            Value::Object(args),
            json!({"tag": null, "need": null, "inner": {}, "list": [{}, {"n": 2}], "other": null})
        );
        // Into the one branch of a union that names the keys sent.
        let Value::Object(union) = json!({"type": "object", "properties": {"shape": {"oneOf": [
            {"type": "object", "properties": {"radius": {"type": "number"}, "label": {"type": "string"}}, "required": ["radius"]},
            {"type": "object", "properties": {"side": {"type": "number"}}, "required": ["side"]}
        ]}}}) else {
            unreachable!()
        };
        let Value::Object(mut args) = json!({"shape": {"radius": 1, "label": null}}) else {
            unreachable!()
        };
        strip_nulls(&mut args, &union);
        assert_eq!(Value::Object(args), json!({"shape": {"radius": 1}}));
    }
}
