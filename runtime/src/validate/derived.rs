//! Schemas schemars derives from ordinary Rust types compile with the built-in validator
//! (with or without the `jsonschema` feature), accept what the types serialize to, and refuse
//! what they would not read.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::keyword::Compiled;
use crate::schema::{Side, clean, input_schema_for, to_wire};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Paging {
    limit: u32,
    cursor: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FlattenStruct {
    query: String,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Filter {
    Author { name: String },
    Range { from: i64, to: i64 },
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DenyWithFlattenEnum {
    query: String,
    #[serde(flatten)]
    filter: Filter,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FlattenMap {
    id: u64,
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct MapBesideEnum {
    #[serde(flatten)]
    filter: Filter,
    #[serde(flatten)]
    extra: BTreeMap<String, i32>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    One(String),
    Two { a: bool },
    Three,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Untagged {
    Number(f64),
    Words(Vec<String>),
    Named { name: String },
}

#[derive(Serialize, Deserialize, JsonSchema)]
enum External {
    Unit,
    Tuple(u8, String),
    Struct { on: bool },
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Strict {
    a: Option<u8>,
    b: Option<Vec<External>>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct NonStringKeys {
    by_id: HashMap<u32, String>,
    by_flag: BTreeMap<bool, u8>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Page<T> {
    items: Vec<T>,
    next: Option<Box<Page<T>>>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DenyWithFlattenStruct {
    #[serde(flatten)]
    paging: Paging,
    #[serde(default)]
    verbose: bool,
}

/// The wire input schema of `T` compiled by the built-in validator, and each value as the
/// wire carries it (a non-object wrapped under `input`).
fn compile<T: JsonSchema>() -> (Compiled, impl Fn(Value) -> Value) {
    let wire = to_wire(clean(input_schema_for::<T>()), Side::Input);
    let compiled = Compiled::new(&Value::Object(wire.schema.clone())).unwrap_or_else(|e| {
        panic!(
            "{}: {e:?}\n{}",
            std::any::type_name::<T>(),
            Value::Object(wire.schema)
        )
    });
    let wrapped = wire.wrapped;
    (
        compiled,
        move |v| if wrapped { json!({ "input": v }) } else { v },
    )
}

/// `T`'s schema accepts every sample serialized and refuses every value in `refused`.
fn holds<T: JsonSchema + Serialize>(samples: &[T], refused: &[Value]) {
    let (compiled, wire) = compile::<T>();
    let name = std::any::type_name::<T>();
    for sample in samples {
        let value = wire(serde_json::to_value(sample).expect("serializes"));
        assert!(compiled.is_valid(&value), "{name}: refused {value}");
        assert!(compiled.failures(&value).is_empty(), "{name}: {value}");
    }
    for value in refused {
        let value = wire(value.clone());
        assert!(!compiled.is_valid(&value), "{name}: accepted {value}");
        assert!(!compiled.failures(&value).is_empty(), "{name}: {value}");
    }
}

#[test]
fn derived_schemas_compile_and_hold() {
    let paging = || Paging {
        limit: 5,
        cursor: None,
    };
    holds(
        &[FlattenStruct {
            query: "q".into(),
            paging: paging(),
        }],
        &[json!({"query": "q"}), json!({"query": "q", "limit": -1})],
    );
    holds(
        &[
            DenyWithFlattenEnum {
                query: "q".into(),
                filter: Filter::Author { name: "n".into() },
            },
            DenyWithFlattenEnum {
                query: "q".into(),
                filter: Filter::Range { from: 1, to: 2 },
            },
        ],
        &[
            json!({"query": "q", "kind": "author", "name": "n", "extra": 1}),
            json!({"query": "q", "kind": "author", "name": "n", "from": 1}),
            json!({"query": "q", "kind": "other"}),
        ],
    );
    holds(
        &[FlattenMap {
            id: 1,
            extra: BTreeMap::from([("x".to_owned(), json!([1]))]),
        }],
        &[json!({"extra": 1})],
    );
    holds(
        &[MapBesideEnum {
            filter: Filter::Range { from: 1, to: 2 },
            extra: BTreeMap::from([("n".to_owned(), 3)]),
        }],
        &[json!({"kind": "range", "from": 1, "to": 2, "n": "three"})],
    );
    holds(
        &[
            Adjacent::One("a".into()),
            Adjacent::Two { a: true },
            Adjacent::Three,
        ],
        &[json!({"t": "One", "c": 5}), json!({"t": "Four"})],
    );
    holds(
        &[
            Untagged::Number(1.5),
            Untagged::Words(vec!["w".into()]),
            Untagged::Named { name: "n".into() },
        ],
        &[json!(true), json!([1])],
    );
    holds(
        &[
            External::Unit,
            External::Tuple(1, "a".into()),
            External::Struct { on: false },
        ],
        &[json!("Other"), json!({"Tuple": [300, "a"]})],
    );
    holds(
        &[
            Strict { a: None, b: None },
            Strict {
                a: Some(1),
                b: Some(vec![External::Unit]),
            },
        ],
        &[json!({"a": 1, "c": 2}), json!({"a": "1"})],
    );
    holds(
        &[NonStringKeys {
            by_id: HashMap::from([(7, "seven".to_owned())]),
            by_flag: BTreeMap::from([(true, 1)]),
        }],
        &[json!({"by_id": {"seven": "x"}, "by_flag": {}})],
    );
    holds(
        &[Tree {
            label: "root".into(),
            children: vec![Tree {
                label: "leaf".into(),
                children: vec![],
            }],
        }],
        &[json!({"label": "r", "children": [{"label": 1, "children": []}]})],
    );
    holds(
        &[Page {
            items: vec![1u8],
            next: Some(Box::new(Page {
                items: vec![2u8],
                next: None,
            })),
        }],
        &[json!({"items": [1], "next": {"items": ["2"]}})],
    );
    holds(
        &[DenyWithFlattenStruct {
            paging: paging(),
            verbose: true,
        }],
        &[json!({"limit": 1, "other": 2})],
    );
}
