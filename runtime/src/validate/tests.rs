//! The built-in validator: its answers agree with the `jsonschema` crate's on generated
//! schemas and values, its messages and pointers, and the schemas it refuses.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use super::Validator;
#[cfg(feature = "jsonschema")]
use super::check;
use super::keyword::Compiled;
use super::schema::Problem;
use super::walk::FailureKind;

const KEYS: [&str; 4] = ["a", "b", "ab", "c"];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-4i64..12).prop_map(Value::from),
        prop::sample::select(vec![0.5, 1.0, 2.5, -1.5, 3.0, 1e20, 1e16]).prop_map(Value::from),
        // Large integers a float holds exactly: beyond 2^53 the `jsonschema` crate reads an
        // integer as the nearest float (`u64::MAX` is then no multiple of 1.5, though it is),
        // where this validator stays exact (see `every_failure_is_reported_at_its_pointer`).
        prop::sample::select(vec![
            json!(1u64 << 60),
            json!(u64::MAX - 2047),
            json!(i64::MIN)
        ]),
        prop::sample::select(vec!["", "a", "ab", "abc", "b1", "é", "xyz12", "aé", "a b"])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), inner, 0..4).prop_map(
                |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            ),
        ]
    })
}

fn small() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(2.5),
        json!(-1),
        json!(1e16),
        json!(10000000000000000u64),
    ])
}

fn count() -> impl Strategy<Value = Value> {
    (0u64..4).prop_map(Value::from)
}

fn names() -> impl Strategy<Value = Value> {
    prop::sample::subsequence(KEYS.to_vec(), 0..3).prop_map(|names| json!(names))
}

/// Schemas of every keyword the built-in validator checks.
fn schema() -> impl Strategy<Value = Value> {
    let types = prop::sample::select(vec![
        "null", "boolean", "object", "array", "number", "string", "integer",
    ]);
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        types.clone().prop_map(|t| json!({"type": t})),
        (types.clone(), types).prop_map(|(a, b)| json!({"type": [a, b]})),
        small().prop_map(|n| json!({"minimum": n})),
        small().prop_map(|n| json!({"maximum": n})),
        small().prop_map(|n| json!({"exclusiveMinimum": n})),
        small().prop_map(|n| json!({"exclusiveMaximum": n})),
        prop::sample::select(vec![json!(2), json!(3), json!(0.5), json!(1.5)])
            .prop_map(|n| json!({"multipleOf": n})),
        count().prop_map(|n| json!({"minLength": n})),
        count().prop_map(|n| json!({"maxLength": n})),
        prop::sample::select(vec!["^a", "b$", "[0-9]+", "^[a-z]*$", "é"])
            .prop_map(|p| json!({"pattern": p})),
        prop::collection::vec(value(), 1..4).prop_map(|v| json!({"enum": v})),
        value().prop_map(|v| json!({"const": v})),
        count().prop_map(|n| json!({"minItems": n})),
        count().prop_map(|n| json!({"maxItems": n})),
        Just(json!({"uniqueItems": true})),
        names().prop_map(|n| json!({"required": n})),
        count().prop_map(|n| json!({"minProperties": n})),
        count().prop_map(|n| json!({"maxProperties": n})),
        names().prop_map(|n| json!({"dependentRequired": {"a": n}})),
    ];
    leaf.prop_recursive(3, 32, 3, |inner| {
        let key = prop::sample::select(KEYS.to_vec());
        prop_oneof![
            (key.clone(), inner.clone()).prop_map(|(k, s)| json!({"properties": {k: s}})),
            inner.clone().prop_map(|s| json!({"items": s})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"prefixItems": [a, b]})),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| json!({"prefixItems": [a], "items": b})),
            (inner.clone(), count(), count()).prop_map(|(s, min, max)| {
                json!({"contains": s, "minContains": min, "maxContains": max})
            }),
            inner.clone().prop_map(|s| json!({"contains": s})),
            (key.clone(), inner.clone(), inner.clone())
                .prop_map(|(k, a, b)| { json!({"properties": {k: a}, "additionalProperties": b}) }),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| {
                json!({"patternProperties": {"^a": a}, "additionalProperties": b})
            }),
            inner.clone().prop_map(|s| json!({"propertyNames": s})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"oneOf": [a, b]})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"allOf": [a, b]})),
            inner.clone().prop_map(|s| json!({"not": s})),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(i, t, e)| json!({"if": i, "then": t, "else": e})),
            (key, inner.clone()).prop_map(|(k, s)| json!({"dependentSchemas": {k: s}})),
            (inner.clone(), inner).prop_map(|(a, b)| merge(a, b)),
        ]
    })
}

/// Both schemas' keywords in one (the first's win).
fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (k, v) in b {
                a.entry(k).or_insert(v);
            }
            Value::Object(a)
        }
        (a, _) => a,
    }
}

fn agree(schema: &Value, values: &[Value]) -> Result<(), TestCaseError> {
    let (oracle, ours) = match (jsonschema::draft202012::new(schema), Compiled::new(schema)) {
        (Ok(oracle), Ok(ours)) => (oracle, ours),
        // Both refuse a malformed schema.
        (Err(_), Err(Problem::Invalid(_))) => return Ok(()),
        (oracle, ours) => {
            return Err(TestCaseError::fail(format!(
                "{schema}: jsonschema {:?}, ours {:?}",
                oracle.err().map(|e| e.to_string()),
                ours.err()
            )));
        }
    };
    for value in values {
        let expected = oracle.is_valid(value);
        prop_assert_eq!(
            ours.is_valid(value),
            expected,
            "schema {} value {}",
            schema,
            value
        );
        prop_assert_eq!(
            ours.failures(value).is_empty(),
            expected,
            "schema {} value {}",
            schema,
            value
        );
    }
    Ok(())
}

#[test]
fn agrees_with_the_jsonschema_crate_on_generated_schemas() {
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(schema(), prop::collection::vec(value(), 12)),
            |(schema, values)| agree(&schema, &values),
        )
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn agrees_on_references_anchors_and_recursion() {
    let tree = json!({
        "$defs": {
            "node": {
                "$anchor": "node",
                "type": "object",
                "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#node"}}},
                "required": ["value"]
            },
            "a~b/c": {"type": "string"}
        },
        "properties": {"root": {"$ref": "#/$defs/node"}, "odd": {"$ref": "#/$defs/a~0b~1c"}, "again": {"$ref": "#"}}
    });
    let values = [
        json!({"root": {"value": 1, "children": [{"value": 2, "children": []}]}}),
        json!({"root": {"value": 1, "children": [{"children": []}]}}),
        json!({"root": {"value": 1, "children": [{"value": "2"}]}}),
        json!({"odd": "x", "again": {"odd": "y", "again": {"root": {"value": 3}}}}),
        json!({"again": {"again": {"odd": 5}}}),
    ];
    let mut runner = TestRunner::default();
    runner
        .run(&Just(()), |()| agree(&tree, &values))
        .unwrap_or_else(|e| panic!("{e}"));
}

fn failures(schema: Value, value: Value) -> Vec<(String, String)> {
    Compiled::new(&schema)
        .expect("compiles")
        .failures(&value)
        .into_iter()
        .map(|f| {
            let what = match f.kind {
                FailureKind::Required(name) => format!("required {name}"),
                FailureKind::Type(types) => format!("type {types}"),
                FailureKind::Keyword { keyword, message } => format!("{keyword}: {message}"),
            };
            (f.at, what)
        })
        .collect()
}

#[test]
fn every_failure_is_reported_at_its_pointer() {
    let schema = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 3, "pattern": "^[A-Z]"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "uniqueItems": true},
            "a/b": {"type": "integer", "maximum": 10, "multipleOf": 0.1}
        },
        "required": ["title", "body"],
        "additionalProperties": false
    });
    let got = failures(
        schema,
        json!({"title": "ab", "tags": ["a", "c", "a", 4], "a/b": 12, "x": 1, "y": 2}),
    );
    let expected: Vec<(String, String)> = [
        ("", "required body"),
        ("/title", "minLength: \"ab\" is shorter than 3 characters"),
        (
            "/title",
            "pattern: \"ab\" does not match the pattern \"^[A-Z]\"",
        ),
        ("/tags/1", "enum: \"c\" is not one of [\"a\",\"b\"]"),
        ("/tags/3", "type string"),
        ("/tags/3", "enum: 4 is not one of [\"a\",\"b\"]"),
        (
            "/tags",
            "uniqueItems: [\"a\",\"c\",\"a\",4] has repeated items",
        ),
        ("/a~1b", "maximum: 12 is greater than the maximum of 10"),
        ("", "additionalProperties: unexpected properties 'x', 'y'"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(got, expected);
    // Decimals as written: 0.3 is a multiple of 0.1, 0.35 is not.
    let tenths = json!({"multipleOf": 0.1});
    assert!(failures(tenths.clone(), json!(0.3)).is_empty());
    assert!(failures(tenths.clone(), json!(12)).is_empty());
    assert_eq!(failures(tenths, json!(0.35)).len(), 1);
    // Patterns read as ECMA-262: `.` stops at every line terminator, `\s` is Unicode's
    // white space; anywhere in the string unless anchored.
    let pattern = |p: &str, s: &str| failures(json!({"pattern": p}), json!(s)).is_empty();
    assert!(!pattern("^.*$", "a\rb"));
    assert!(!pattern("^.*$", "a\u{2028}b"));
    assert!(pattern("^.*$", "aé😀"));
    assert!(!pattern("^\\S+$", "a\u{a0}b"));
    assert!(pattern("^[\\s\\d]+$", "1\u{3000}2"));
    assert!(pattern("^a\\.b$", "a.b"));
    assert!(!pattern("^a\\.b$", "axb"));
    assert!(pattern("[.]", "."));
    assert!(!pattern("[.]", "x"));
    assert!(pattern("b", "abc"));
    assert!(!pattern("^\\d+$", "١٢"));
    // `[` inside a class is a literal, as in ECMA-262 (not a nested class).
    assert!(!pattern("^[[:digit:]]+$", "5"));
    assert!(pattern("^[[:digit:]]+$", ":]]"));
    // Numbers compare exactly, an integer beside a float too.
    let holds = |schema: Value, value: Value| failures(schema, value).is_empty();
    assert!(!holds(
        json!({"maximum": 1e16}),
        json!(10000000000000001u64)
    ));
    assert!(holds(json!({"maximum": 1e16}), json!(10000000000000000u64)));
    assert!(!holds(
        json!({"const": 9007199254740993u64}),
        json!(9007199254740992.0)
    ));
    assert!(!holds(
        json!({"maximum": 18446744073709551615u64}),
        json!(1.8446744073709552e19)
    ));
    assert!(holds(json!({"exclusiveMinimum": 2.5}), json!(3)));
    assert!(!holds(json!({"exclusiveMinimum": 2.5}), json!(2)));
    assert!(holds(json!({"minimum": -2.5}), json!(-2)));
    assert!(!holds(json!({"minimum": -2.5}), json!(-3)));
    assert!(!holds(json!({"multipleOf": 7}), json!(1e300)));
    assert!(holds(json!({"multipleOf": 2}), json!(1e300)));
    // 2^64 - 1 = 3 x 5 x 17 x 257 x 641 x 65537 x 6700417: a multiple of 1.5; 2^64 - 2 is not.
    assert!(holds(json!({"multipleOf": 1.5}), json!(u64::MAX)));
    assert!(!holds(json!({"multipleOf": 1.5}), json!(u64::MAX - 1)));
    // A huge invalid value costs one bounded report.
    let many: Vec<Value> = (0..10_000).map(|_| json!("x")).collect();
    let report = failures(json!({"items": {"type": "integer"}}), Value::Array(many));
    assert_eq!(report.len(), super::walk::MAX_FAILURES);
    // Long arrays are compared by a canonical text: numbers by value, members in any order.
    let unique =
        |items: Vec<Value>| failures(json!({"uniqueItems": true}), Value::Array(items)).is_empty();
    let mut long: Vec<Value> = (0..40).map(Value::from).collect();
    assert!(unique(long.clone()));
    long.push(json!(7.0));
    assert!(!unique(long.clone()));
    let mut objects: Vec<Value> = (0..40)
        .map(|i| json!({"a": i, "b": [i, {"c": 1}]}))
        .collect();
    assert!(unique(objects.clone()));
    objects.push(json!({"b": [3.0, {"c": 1.0}], "a": 3}));
    assert!(!unique(objects));
    let strings: Vec<Value> = (0..40)
        .map(|i| json!(format!("{i}")))
        .chain([json!(5)])
        .collect();
    assert!(unique(strings));
    // A union says what it allows.
    assert_eq!(
        failures(
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            json!(5)
        ),
        [(
            String::new(),
            "anyOf: 5 matches none of the allowed alternatives (string, null)".to_owned()
        )]
    );
}

#[test]
fn malformed_and_unchecked_schemas_are_refused() {
    for (schema, expected) in [
        (
            json!({"type": "no-such-type"}),
            "`type` \"no-such-type\" is none of",
        ),
        (
            json!({"properties": {"a": {"minLength": -1}}}),
            "at `/properties/a`: `minLength` must be a non-negative integer",
        ),
        (
            json!({"required": "a"}),
            "`required` must be an array of strings",
        ),
        (json!({"anyOf": []}), "`anyOf` must not be empty"),
        (
            json!({"items": [{"type": "string"}]}),
            "`prefixItems` in 2020-12",
        ),
        (json!({"$ref": "#/$defs/missing"}), "points at nothing"),
        (json!({"$ref": "#nowhere"}), "names no `$anchor`"),
        (
            json!({"$defs": {"a": {"$anchor": "x"}, "b": {"$dynamicAnchor": "x"}}}),
            "the anchor `x` also names the schema at",
        ),
        (
            json!({"properties": {"a": 5}}),
            "a schema is an object or a boolean",
        ),
        (
            json!({"multipleOf": 0}),
            "`multipleOf` must be a number above zero",
        ),
        (json!({"$ref": "#"}), "loops back"),
        (
            json!({"$defs": {"a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}},
                "properties": {"x": {"$ref": "#/$defs/a"}}}),
            "loops back",
        ),
        (
            json!({"$defs": {"a": {"not": {"$ref": "#"}}}, "allOf": [{"$ref": "#/$defs/a"}]}),
            "loops back",
        ),
    ] {
        match Compiled::new(&schema) {
            Err(Problem::Invalid(reason)) => {
                assert!(reason.contains(expected), "{schema}: {reason}");
            }
            other => panic!("{schema}: {other:?}"),
        }
    }
    for (schema, expected) in [
        (
            json!({"$defs": {"a": {"$dynamicAnchor": "a"}}, "items": {"$dynamicRef": "#a"}}),
            "`$dynamicRef` at `/items`",
        ),
        // Another dialect's meta-schema, or one with other vocabularies, is not read.
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "minimum": 1}),
            "`$schema` `http://json-schema.org/draft-07/schema#` at the root",
        ),
        (
            json!({"$schema": "https://example.com/meta/no-validation", "minimum": 1}),
            "only 2020-12's own meta-schema",
        ),
        (json!({"pattern": "[\\D]"}), "inside a class"),
        (
            json!({"pattern": "[a--b]"}),
            "syntax ECMA-262 does not have",
        ),
        // A range with a set at either end would join the set's bounds to its neighbour.
        (
            json!({"pattern": "[+-\\d]"}),
            "syntax ECMA-262 does not have",
        ),
        (
            json!({"pattern": "[\\w-z]"}),
            "syntax ECMA-262 does not have",
        ),
        (
            json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
            "another document",
        ),
        (
            json!({"$defs": {"x": {"$id": "x.json"}}}),
            "an embedded schema resource",
        ),
        (json!({"pattern": "(?<=a)b"}), "the pattern `(?<=a)b`"),
        (json!({"pattern": "[^]"}), "an empty class"),
        (
            json!({"pattern": "(?i)abc"}),
            "syntax ECMA-262 does not have",
        ),
        (
            json!({"pattern": "\\Aabc"}),
            "syntax ECMA-262 does not have",
        ),
        (
            json!({"dependencies": {"a": ["b"]}}),
            "`dependencies` at the root",
        ),
        (json!({"pattern": "[\\S]"}), "inside a class"),
    ] {
        match Compiled::new(&schema) {
            Err(Problem::Unsupported(what)) => {
                assert!(what.contains(expected), "{schema}: {what}");
            }
            other => panic!("{schema}: {other:?}"),
        }
        // With the `jsonschema` feature such a schema is checked by that crate; without it,
        // the registry refuses it naming the feature.
        #[cfg(not(feature = "jsonschema"))]
        assert!(
            Validator::new(&schema).is_err_and(|e| e.contains("`jsonschema` feature")),
            "{schema}"
        );
    }
}

#[cfg(feature = "jsonschema")]
#[test]
fn the_jsonschema_feature_checks_what_the_built_in_validator_does_not() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"pattern": "^(?!x)"}},
    });
    let validator = Validator::new(&schema).expect("compiles");
    assert!(matches!(validator, Validator::Full(_)));
    assert!(check(&validator, &json!({"a": 1}), &[]).is_ok());
    let error = check(&validator, &json!({"a": "1", "b": 2}), &[]).expect_err("invalid");
    assert_eq!(error.code().as_str(), "VALIDATION_INVALID_TYPE");
    let wire = error.details().expect("details");
    let pointers: Vec<&str> = wire["violations"]
        .as_array()
        .expect("violations")
        .iter()
        .filter_map(|v| v["pointer"].as_str())
        .collect();
    assert!(pointers.contains(&"/a"), "{wire}");
}

#[test]
fn the_2020_12_meta_schema_is_read() {
    for uri in [
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
    ] {
        let compiled = Compiled::new(&json!({"$schema": uri, "minimum": 2})).expect(uri);
        assert!(!compiled.is_valid(&json!(1)));
    }
    assert!(matches!(
        Compiled::new(&json!({"$schema": 5})),
        Err(Problem::Invalid(_))
    ));
}

#[test]
fn a_ref_may_name_a_dynamic_anchor() {
    let compiled = Compiled::new(&json!({
        "$defs": {"s": {"$dynamicAnchor": "items", "type": "string"}},
        "type": "array",
        "items": {"$ref": "#items"}
    }))
    .expect("a `$dynamicAnchor` is a plain-name fragment too");
    assert!(compiled.is_valid(&json!(["a"])));
    assert!(!compiled.is_valid(&json!([1])));
}

#[test]
fn unicode_properties_and_control_escapes_in_patterns() {
    let pattern = |p: &str, s: &str| failures(json!({"pattern": p}), json!(s)).is_empty();
    assert!(pattern("^\\p{Letter}+$", "héllo"));
    assert!(!pattern("^\\p{Letter}+$", "h1"));
    assert!(pattern("^\\p{digit}+$", "٢٣"));
    assert!(pattern("^\\P{digit}+$", "ab"));
    assert!(pattern("^\\p{Script=Greek}+$", "αβγ"));
    assert!(pattern("^\\cC$", "\u{3}"));
    assert!(!pattern("^\\cC$", "C"));
    assert!(pattern("^[\\cJ]$", "\n"));
    // `\d`, `\w` and `\b` stay ASCII, as in ECMA-262.
    assert!(!pattern("^\\w+$", "é"));
    assert!(pattern("\\bab\\b", "x ab y"));
    assert!(!pattern("\\bé", "é"));
    assert!(pattern("^[\\b]$", "\u{8}"));
    assert!(pattern("^[a&&b]+$", "a&&b"));
    // A dash beside a set, at either end of the class, is a literal.
    assert!(pattern("^[\\d-]+$", "1-2"));
    assert!(pattern("^[-\\w]+$", "a-b"));
    assert!(!pattern("^[\\d-]+$", ","));
}

/// A schema whose `anyOf` branch leads back to it, with `unevaluatedProperties`: collecting
/// what the passing branch evaluated tests it again, which must not double at every level of
/// a deeply nested value (100 levels would never finish).
#[test]
fn unevaluated_keywords_cost_linear_time_in_nesting() {
    let compiled = Compiled::new(&json!({
        "$defs": {"n": {
            "anyOf": [{"properties": {"c": {"$ref": "#/$defs/n"}}}],
            "unevaluatedProperties": false
        }},
        "$ref": "#/$defs/n"
    }))
    .expect("compiles");
    let mut value = json!({});
    for _ in 0..100 {
        value = json!({"c": value});
    }
    assert!(compiled.is_valid(&value));
    let mut bad = json!({"x": 1});
    for _ in 0..100 {
        bad = json!({"c": bad});
    }
    assert!(!compiled.is_valid(&bad));
    assert!(!compiled.failures(&bad).is_empty());
}

#[test]
fn unevaluated_properties_see_through_applicators() {
    // What schemars derives for a struct with `deny_unknown_fields` and a flattened
    // internally tagged enum.
    let schema = json!({
        "type": "object",
        "properties": {"limit": {"type": "integer"}},
        "oneOf": [
            {"properties": {"kind": {"const": "a"}, "x": {"type": "string"}}, "required": ["kind", "x"]},
            {"properties": {"kind": {"const": "b"}, "y": {"type": "integer"}}, "required": ["kind", "y"]}
        ],
        "unevaluatedProperties": false
    });
    let compiled = Compiled::new(&schema).expect("compiles");
    assert!(compiled.is_valid(&json!({"limit": 1, "kind": "a", "x": "s"})));
    assert!(compiled.is_valid(&json!({"kind": "b", "y": 2})));
    // A member only the branch that failed names is unevaluated.
    assert!(!compiled.is_valid(&json!({"kind": "a", "x": "s", "y": 2})));
    assert!(!compiled.is_valid(&json!({"kind": "a", "x": "s", "z": 0})));
    assert_eq!(
        failures(schema, json!({"kind": "a", "x": "s", "z": 0})),
        vec![(
            String::new(),
            "unevaluatedProperties: unexpected property 'z'".to_owned()
        )]
    );
    let items = Compiled::new(&json!({
        "prefixItems": [{"type": "integer"}],
        "anyOf": [{"prefixItems": [true, {"type": "string"}]}, {"contains": {"type": "null"}}],
        "unevaluatedItems": false
    }))
    .expect("compiles");
    assert!(items.is_valid(&json!([1, "a"])));
    assert!(items.is_valid(&json!([1, null, null])));
    assert!(!items.is_valid(&json!([1, "a", 3])));
    assert!(!items.is_valid(&json!([1, 2])));
}
