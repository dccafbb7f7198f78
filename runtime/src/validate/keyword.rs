//! A compiled schema's shape: nodes of keywords referring to each other by index, which
//! [`schema`](super::schema) builds from JSON and [`walk`](super::walk) checks values against.

use serde_json::{Number, Value};

use super::pattern::Pattern;

/// A compiled schema: nodes referring to each other by index (a `$ref` may loop).
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(super) nodes: Vec<Node>,
    /// Whether a node has `unevaluatedProperties` or `unevaluatedItems`: then the subschemas
    /// a value is tested against are remembered for the walk (see `walk::Memo`).
    pub(super) unevaluated: bool,
}

/// One (sub)schema.
#[derive(Debug)]
pub(super) enum Node {
    /// `true` accepts everything, `false` nothing.
    Always(bool),
    /// An object schema's assertions, in the order they are checked.
    Keywords(Vec<Keyword>),
}

/// A JSON type as `type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonType {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    String,
    Integer,
}

impl JsonType {
    pub(super) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "object" => Self::Object,
            "array" => Self::Array,
            "number" => Self::Number,
            "string" => Self::String,
            "integer" => Self::Integer,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Boolean => "boolean",
            Self::Object => "object",
            Self::Array => "array",
            Self::Number => "number",
            Self::String => "string",
            Self::Integer => "integer",
        }
    }
}

/// One assertion, or one applicator of subschemas.
#[derive(Debug)]
pub(super) enum Keyword {
    Ref(usize),
    Type(Vec<JsonType>),
    Const(Value),
    /// The options, and their JSON for messages (written once).
    Enum {
        options: Vec<Value>,
        quoted: String,
    },
    Minimum(Number),
    Maximum(Number),
    ExclusiveMinimum(Number),
    ExclusiveMaximum(Number),
    MultipleOf(Number),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Pattern),
    PrefixItems(Vec<usize>),
    /// `items`: every element from `from` on (after `prefixItems`).
    Items {
        node: usize,
        from: usize,
    },
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    Contains {
        node: usize,
        min: u64,
        max: Option<u64>,
    },
    Required(Vec<String>),
    Properties(Vec<(String, usize)>),
    PatternProperties(Vec<(Pattern, usize)>),
    /// `additionalProperties`: every member neither named in `properties` nor matched by a
    /// `patternProperties` key.
    AdditionalProperties {
        node: usize,
        named: Vec<String>,
        patterns: Vec<Pattern>,
    },
    /// `unevaluatedProperties`: every member that no keyword of node `owner` (nor of a
    /// subschema it applies in place and that the value passes) evaluated.
    UnevaluatedProperties {
        node: usize,
        owner: usize,
    },
    /// `unevaluatedItems`: every item no keyword of node `owner` evaluated, as above.
    UnevaluatedItems {
        node: usize,
        owner: usize,
    },
    PropertyNames(usize),
    MinProperties(u64),
    MaxProperties(u64),
    DependentRequired(Vec<(String, Vec<String>)>),
    DependentSchemas(Vec<(String, usize)>),
    AllOf(Vec<usize>),
    AnyOf(Vec<usize>),
    OneOf(Vec<usize>),
    Not(usize),
    If {
        test: usize,
        then: Option<usize>,
        otherwise: Option<usize>,
    },
}
