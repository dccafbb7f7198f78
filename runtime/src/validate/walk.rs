//! Checking a value against a [`Compiled`] schema: a yes or no on the fast path (no
//! allocation, first failure ends it), and every violation with its JSON pointer when the
//! answer is no.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::keyword::{Compiled, JsonType, Keyword, Node};
use super::value::{compare, equal, multiple, unique};

/// One violation: where (a JSON pointer into the value), and what.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) at: String,
    pub(crate) kind: FailureKind,
}

/// What a [`Failure`] broke.
#[derive(Debug)]
pub(crate) enum FailureKind {
    /// A member the object must have is missing (`required`, `dependentRequired`).
    Required(String),
    /// The value is of another type than these (joined with "or").
    Type(String),
    /// Another keyword's assertion, and what is wrong in words (the value quoted).
    Keyword {
        keyword: Cow<'static, str>,
        message: String,
    },
}

/// Where failures go while walking, with the pointer of the value at hand.
pub(super) struct Sink {
    at: String,
    failures: Vec<Failure>,
}

/// A child of the value at hand: an array index or an object member.
#[derive(Clone, Copy)]
enum Step<'a> {
    Index(usize),
    Name(&'a str),
}

/// Values quoted in messages are cut to this many characters.
const QUOTE: usize = 100;

/// A value's failures reported at most: past them, the walk stops (a client's huge invalid
/// array costs one pass, not a report per item).
pub(crate) const MAX_FAILURES: usize = 50;

impl Compiled {
    /// Whether `value` is valid, stopping at the first failure.
    pub(crate) fn is_valid(&self, value: &Value) -> bool {
        self.remembering(|| self.walk(0, value, &mut None))
    }

    /// Every failure of `value`, in the order the schema's keywords are checked.
    pub(crate) fn failures(&self, value: &Value) -> Vec<Failure> {
        let mut sink = Some(Sink {
            at: String::new(),
            failures: Vec::new(),
        });
        self.remembering(|| self.walk(0, value, &mut sink));
        sink.map(|s| s.failures).unwrap_or_default()
    }

    pub(super) fn walk(&self, node: usize, value: &Value, sink: &mut Option<Sink>) -> bool {
        match &self.nodes[node] {
            Node::Always(true) => true,
            Node::Always(false) => fail(sink, "false", || {
                format!("{} is not allowed here", quote(value))
            }),
            Node::Keywords(keywords) => {
                let mut ok = true;
                for keyword in keywords {
                    if !self.keyword(keyword, value, sink) {
                        ok = false;
                        if sink
                            .as_ref()
                            .is_none_or(|s| s.failures.len() >= MAX_FAILURES)
                        {
                            return false;
                        }
                    }
                }
                ok
            }
        }
    }

    /// Walk a child of the value at hand, its step added to the pointer.
    fn child(&self, node: usize, value: &Value, step: Step<'_>, sink: &mut Option<Sink>) -> bool {
        let Some(s) = sink.as_mut() else {
            return self.walk(node, value, sink);
        };
        let len = s.at.len();
        s.at.push('/');
        match step {
            Step::Index(i) => s.at.push_str(&i.to_string()),
            Step::Name(name) => s.at.push_str(&escape(name)),
        }
        let ok = self.walk(node, value, sink);
        if let Some(s) = sink.as_mut() {
            s.at.truncate(len);
        }
        ok
    }

    fn keyword(&self, keyword: &Keyword, value: &Value, sink: &mut Option<Sink>) -> bool {
        match (keyword, value) {
            (Keyword::Ref(node), _) => self.walk(*node, value, sink),
            (Keyword::Type(types), _) => {
                types.iter().any(|t| is(*t, value))
                    || push(sink, || {
                        FailureKind::Type(
                            types
                                .iter()
                                .map(|t| t.name())
                                .collect::<Vec<_>>()
                                .join(" or "),
                        )
                    })
            }
            (Keyword::Const(expected), _) => {
                equal(value, expected)
                    || fail(sink, "const", || {
                        format!("{} is not {}", quote(value), quote(expected))
                    })
            }
            (Keyword::Enum { options, quoted }, _) => {
                options.iter().any(|o| equal(value, o))
                    || fail(sink, "enum", || {
                        format!("{} is not one of {quoted}", quote(value))
                    })
            }
            (Keyword::Minimum(limit), Value::Number(n)) => {
                matches!(compare(n, limit), Some(Ordering::Greater | Ordering::Equal))
                    || fail(sink, "minimum", || {
                        format!("{n} is less than the minimum of {limit}")
                    })
            }
            (Keyword::Maximum(limit), Value::Number(n)) => {
                matches!(compare(n, limit), Some(Ordering::Less | Ordering::Equal))
                    || fail(sink, "maximum", || {
                        format!("{n} is greater than the maximum of {limit}")
                    })
            }
            (Keyword::ExclusiveMinimum(limit), Value::Number(n)) => {
                compare(n, limit) == Some(Ordering::Greater)
                    || fail(sink, "exclusiveMinimum", || {
                        format!("{n} is not greater than {limit}")
                    })
            }
            (Keyword::ExclusiveMaximum(limit), Value::Number(n)) => {
                compare(n, limit) == Some(Ordering::Less)
                    || fail(sink, "exclusiveMaximum", || {
                        format!("{n} is not less than {limit}")
                    })
            }
            (Keyword::MultipleOf(of), Value::Number(n)) => {
                multiple(n, of)
                    || fail(sink, "multipleOf", || {
                        format!("{n} is not a multiple of {of}")
                    })
            }
            (Keyword::MinLength(min), Value::String(s)) => {
                (s.len() as u64 >= *min && s.chars().count() as u64 >= *min)
                    || fail(sink, "minLength", || {
                        format!("{} is shorter than {min} characters", quote(value))
                    })
            }
            (Keyword::MaxLength(max), Value::String(s)) => {
                (s.len() as u64 <= *max || s.chars().count() as u64 <= *max)
                    || fail(sink, "maxLength", || {
                        format!("{} is longer than {max} characters", quote(value))
                    })
            }
            (Keyword::Pattern(pattern), Value::String(s)) => {
                pattern.regex.is_match(s)
                    || fail(sink, "pattern", || {
                        format!(
                            "{} does not match the pattern {}",
                            quote(value),
                            quote(&Value::String(pattern.source.clone()))
                        )
                    })
            }
            (Keyword::PrefixItems(nodes), Value::Array(items)) => {
                let mut ok = true;
                for (i, (node, item)) in nodes.iter().zip(items).enumerate() {
                    if !self.child(*node, item, Step::Index(i), sink) {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::Items { node, from }, Value::Array(items)) => {
                let mut ok = true;
                for (i, item) in items.iter().enumerate().skip(*from) {
                    if !self.child(*node, item, Step::Index(i), sink) {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::MinItems(min), Value::Array(items)) => {
                items.len() as u64 >= *min
                    || fail(sink, "minItems", || {
                        format!("{} has fewer than {min} items", quote(value))
                    })
            }
            (Keyword::MaxItems(max), Value::Array(items)) => {
                items.len() as u64 <= *max
                    || fail(sink, "maxItems", || {
                        format!("{} has more than {max} items", quote(value))
                    })
            }
            (Keyword::UniqueItems, Value::Array(items)) => {
                let unique = unique(items);
                unique
                    || fail(sink, "uniqueItems", || {
                        format!("{} has repeated items", quote(value))
                    })
            }
            (Keyword::Contains { node, min, max }, Value::Array(items)) => {
                let matching = items.iter().filter(|item| self.test(*node, item)).count() as u64;
                if matching < *min {
                    let keyword = if *min == 1 { "contains" } else { "minContains" };
                    return fail(sink, keyword, || {
                        format!(
                            "{} has {matching} items matching `contains`, fewer than {min}",
                            quote(value)
                        )
                    });
                }
                max.is_none_or(|max| matching <= max)
                    || fail(sink, "maxContains", || {
                        format!(
                            "{} has {matching} items matching `contains`, more than {}",
                            quote(value),
                            max.unwrap_or_default()
                        )
                    })
            }
            (Keyword::Required(names), Value::Object(members)) => {
                let mut ok = true;
                for name in names {
                    if !members.contains_key(name) {
                        ok = false;
                        push(sink, || FailureKind::Required(name.clone()));
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::Properties(properties), Value::Object(members)) => {
                let mut ok = true;
                for (name, node) in properties {
                    if let Some(member) = members.get(name)
                        && !self.child(*node, member, Step::Name(name), sink)
                    {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::PatternProperties(patterns), Value::Object(members)) => {
                let mut ok = true;
                for (name, member) in members {
                    for (pattern, node) in patterns {
                        if pattern.regex.is_match(name)
                            && !self.child(*node, member, Step::Name(name), sink)
                        {
                            ok = false;
                            if sink.is_none() {
                                return false;
                            }
                        }
                    }
                }
                ok
            }
            (
                Keyword::AdditionalProperties {
                    node,
                    named,
                    patterns,
                },
                Value::Object(members),
            ) => {
                let extra = members.iter().filter(|(name, _)| {
                    !named.iter().any(|n| n == *name)
                        && !patterns.iter().any(|p| p.regex.is_match(name))
                });
                self.rest(*node, extra, "additionalProperties", sink)
            }
            (Keyword::UnevaluatedProperties { node, owner }, Value::Object(members)) => {
                let mut seen = vec![false; members.len()];
                self.mark_properties(*owner, *owner, value, &mut seen);
                let extra = members
                    .iter()
                    .zip(&seen)
                    .filter(|(_, seen)| !**seen)
                    .map(|(member, _)| member);
                self.rest(*node, extra, "unevaluatedProperties", sink)
            }
            (Keyword::UnevaluatedItems { node, owner }, Value::Array(items)) => {
                let mut seen = vec![false; items.len()];
                self.mark_items(*owner, *owner, value, &mut seen);
                let mut ok = true;
                for (i, item) in items.iter().enumerate().filter(|(i, _)| !seen[*i]) {
                    if !self.child(*node, item, Step::Index(i), sink) {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::PropertyNames(node), Value::Object(members)) => {
                let bad: Vec<&String> = members
                    .keys()
                    .filter(|name| !self.test(*node, &Value::String((*name).clone())))
                    .collect();
                bad.is_empty()
                    || fail(sink, "propertyNames", || {
                        format!("the property name '{}' is not allowed", bad[0])
                    })
            }
            (Keyword::MinProperties(min), Value::Object(members)) => {
                members.len() as u64 >= *min
                    || fail(sink, "minProperties", || {
                        format!("{} has fewer than {min} properties", quote(value))
                    })
            }
            (Keyword::MaxProperties(max), Value::Object(members)) => {
                members.len() as u64 <= *max
                    || fail(sink, "maxProperties", || {
                        format!("{} has more than {max} properties", quote(value))
                    })
            }
            (Keyword::DependentRequired(dependencies), Value::Object(members)) => {
                let mut ok = true;
                for (name, needs) in dependencies {
                    if !members.contains_key(name) {
                        continue;
                    }
                    for need in needs {
                        if !members.contains_key(need) {
                            ok = false;
                            push(sink, || FailureKind::Required(need.clone()));
                            if sink.is_none() {
                                return false;
                            }
                        }
                    }
                }
                ok
            }
            (Keyword::DependentSchemas(dependencies), Value::Object(members)) => {
                let mut ok = true;
                for (name, node) in dependencies {
                    if members.contains_key(name) && !self.walk(*node, value, sink) {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::AllOf(nodes), _) => {
                let mut ok = true;
                for node in nodes {
                    if !self.walk(*node, value, sink) {
                        ok = false;
                        if sink.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            (Keyword::AnyOf(nodes), _) => {
                nodes.iter().any(|node| self.test(*node, value))
                    || fail(sink, "anyOf", || {
                        format!(
                            "{} matches none of the allowed alternatives{}",
                            quote(value),
                            self.alternatives(nodes)
                        )
                    })
            }
            (Keyword::OneOf(nodes), _) => {
                match nodes.iter().filter(|node| self.test(**node, value)).count() {
                    1 => true,
                    0 => fail(sink, "oneOf", || {
                        format!(
                            "{} matches none of the allowed alternatives{}",
                            quote(value),
                            self.alternatives(nodes)
                        )
                    }),
                    _ => fail(sink, "oneOf", || {
                        format!(
                            "{} matches more than one of the `oneOf` alternatives",
                            quote(value)
                        )
                    }),
                }
            }
            (Keyword::Not(node), _) => {
                !self.test(*node, value)
                    || fail(sink, "not", || {
                        format!("{} matches the schema under `not`", quote(value))
                    })
            }
            (
                Keyword::If {
                    test,
                    then,
                    otherwise,
                },
                _,
            ) => match if self.test(*test, value) {
                then
            } else {
                otherwise
            } {
                Some(node) => self.walk(*node, value, sink),
                None => true,
            },
            // An assertion about another type of value holds. Each keyword is named, so a
            // keyword added to `Keyword` without a check here does not compile.
            (
                Keyword::Minimum(_)
                | Keyword::Maximum(_)
                | Keyword::ExclusiveMinimum(_)
                | Keyword::ExclusiveMaximum(_)
                | Keyword::MultipleOf(_)
                | Keyword::MinLength(_)
                | Keyword::MaxLength(_)
                | Keyword::Pattern(_)
                | Keyword::PrefixItems(_)
                | Keyword::Items { .. }
                | Keyword::MinItems(_)
                | Keyword::MaxItems(_)
                | Keyword::UniqueItems
                | Keyword::Contains { .. }
                | Keyword::Required(_)
                | Keyword::Properties(_)
                | Keyword::PatternProperties(_)
                | Keyword::AdditionalProperties { .. }
                | Keyword::UnevaluatedProperties { .. }
                | Keyword::UnevaluatedItems { .. }
                | Keyword::PropertyNames(_)
                | Keyword::MinProperties(_)
                | Keyword::MaxProperties(_)
                | Keyword::DependentRequired(_)
                | Keyword::DependentSchemas(_),
                _,
            ) => true,
        }
    }

    /// The members of an object `extra` (those no other keyword took) against `node`: each
    /// one checked, or, for `false`, each one named in a single failure of `keyword`.
    fn rest<'v>(
        &self,
        node: usize,
        mut extra: impl Iterator<Item = (&'v String, &'v Value)>,
        keyword: &'static str,
        sink: &mut Option<Sink>,
    ) -> bool {
        if let Node::Always(false) = self.nodes[node] {
            if sink.is_none() {
                return extra.next().is_none();
            }
            let names: Vec<String> = extra.map(|(name, _)| format!("'{name}'")).collect();
            return names.is_empty()
                || fail(sink, keyword, || match names.len() {
                    1 => format!("unexpected property {}", names[0]),
                    _ => format!("unexpected properties {}", names.join(", ")),
                });
        }
        let mut ok = true;
        for (name, member) in extra {
            if !self.child(node, member, Step::Name(name), sink) {
                ok = false;
                if sink.is_none() {
                    return false;
                }
            }
        }
        ok
    }

    /// " (string, null)" when every alternative names its types, else nothing.
    fn alternatives(&self, nodes: &[usize]) -> String {
        let names: Option<Vec<String>> = nodes
            .iter()
            .map(|node| match &self.nodes[*node] {
                Node::Keywords(keywords) => keywords.iter().find_map(|k| match k {
                    Keyword::Type(types) => Some(
                        types
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(" or "),
                    ),
                    _ => None,
                }),
                Node::Always(_) => None,
            })
            .collect();
        names.map_or_else(String::new, |names| format!(" ({})", names.join(", ")))
    }
}

/// Record a keyword's failure; `false`, so a check reads `holds || fail(..)`.
fn fail(sink: &mut Option<Sink>, keyword: &'static str, message: impl FnOnce() -> String) -> bool {
    push(sink, || FailureKind::Keyword {
        keyword: Cow::Borrowed(keyword),
        message: message(),
    })
}

fn push(sink: &mut Option<Sink>, kind: impl FnOnce() -> FailureKind) -> bool {
    if let Some(s) = sink.as_mut()
        && s.failures.len() < MAX_FAILURES
    {
        s.failures.push(Failure {
            at: s.at.clone(),
            kind: kind(),
        });
    }
    false
}

/// A value as JSON, cut to [`QUOTE`] characters (a huge value is not written out whole).
pub(super) fn quote(value: &Value) -> String {
    /// Keeps the first bytes written, then refuses more, which ends the serialization.
    struct Bounded(Vec<u8>);
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = (QUOTE * 4 + 4).saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded(Vec::new());
    let _ = serde_json::to_writer(&mut out, value);
    let text = String::from_utf8_lossy(&out.0);
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.into_owned(),
    }
}

fn is(t: JsonType, value: &Value) -> bool {
    match (t, value) {
        (JsonType::Null, Value::Null)
        | (JsonType::Boolean, Value::Bool(_))
        | (JsonType::Object, Value::Object(_))
        | (JsonType::Array, Value::Array(_))
        | (JsonType::Number, Value::Number(_))
        | (JsonType::String, Value::String(_)) => true,
        // 2020-12: a number with a zero fractional part is an integer.
        (JsonType::Integer, Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A JSON pointer segment: `~` as `~0`, `/` as `~1`.
pub(super) fn escape(segment: &str) -> std::borrow::Cow<'_, str> {
    if segment.contains(['~', '/']) {
        segment.replace('~', "~0").replace('/', "~1").into()
    } else {
        segment.into()
    }
}
