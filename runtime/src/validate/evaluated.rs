//! What `unevaluatedProperties` and `unevaluatedItems` see: the members and items a schema's
//! other keywords, and the subschemas it applies in place, evaluated; and the answers of the
//! tests that collecting them repeats, remembered for one validation.

use serde_json::Value;

use super::keyword::{Compiled, Keyword, Node};

/// The answers of [`Compiled::test`] during one validation of a schema with `unevaluated*`,
/// by node and value (its address, stable while the value is borrowed). Collecting what the
/// subschemas applied in place evaluated tests the branches of `anyOf`, `oneOf` and `if`
/// again; remembered, a value nested `n` deep costs `n` tests, not `2^n`.
type Memo = std::collections::HashMap<(usize, usize), bool>;

thread_local! {
    static MEMO: std::cell::RefCell<Option<Memo>> = const { std::cell::RefCell::new(None) };
}

impl Compiled {
    /// Run `f` with a [`Memo`] of its own when the schema has `unevaluated*` keywords.
    pub(super) fn remembering<T>(&self, f: impl FnOnce() -> T) -> T {
        if !self.unevaluated {
            return f();
        }
        /// Puts back the memo of an enclosing validation, however `f` ends.
        struct Restore(Option<Memo>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let outer = self.0.take();
                MEMO.with(|memo| *memo.borrow_mut() = outer);
            }
        }
        let _restore = Restore(MEMO.with(|memo| memo.borrow_mut().replace(Memo::new())));
        f()
    }

    /// Whether `value` is valid against `node`, reporting nothing (the branches of
    /// `anyOf`, `oneOf`, `not`, `if` and `contains`).
    pub(super) fn test(&self, node: usize, value: &Value) -> bool {
        if !self.unevaluated {
            return self.walk(node, value, &mut None);
        }
        let key = (node, std::ptr::from_ref(value) as usize);
        if let Some(known) = MEMO.with(|memo| memo.borrow().as_ref()?.get(&key).copied()) {
            return known;
        }
        let valid = self.walk(node, value, &mut None);
        MEMO.with(|memo| {
            if let Some(memo) = memo.borrow_mut().as_mut() {
                memo.insert(key, valid);
            }
        });
        valid
    }

    /// The subschemas of `node` applied in place to `value` whose annotations count for
    /// `unevaluated*`: every one a valid `node` applies, and of `anyOf`, `oneOf` and `if`
    /// only those `value` passes (`not` contributes none). `f` gets each keyword of `node`
    /// and then of those subschemas, deepest last; the keywords of `owner` itself are those
    /// of the schema asking, whose own `unevaluated*` is the one being checked.
    fn in_place(&self, node: usize, value: &Value, f: &mut impl FnMut(&Keyword)) {
        let Node::Keywords(keywords) = &self.nodes[node] else {
            return;
        };
        for keyword in keywords {
            f(keyword);
            match keyword {
                Keyword::Ref(n) => self.in_place(*n, value, f),
                Keyword::AllOf(ns) => ns.iter().for_each(|n| self.in_place(*n, value, f)),
                Keyword::AnyOf(ns) | Keyword::OneOf(ns) => {
                    for n in ns {
                        if self.test(*n, value) {
                            self.in_place(*n, value, f);
                        }
                    }
                }
                Keyword::If {
                    test,
                    then,
                    otherwise,
                } => {
                    if self.test(*test, value) {
                        self.in_place(*test, value, f);
                        if let Some(n) = then {
                            self.in_place(*n, value, f);
                        }
                    } else if let Some(n) = otherwise {
                        self.in_place(*n, value, f);
                    }
                }
                Keyword::DependentSchemas(members) => {
                    if let Value::Object(object) = value {
                        for (name, n) in members {
                            if object.contains_key(name) {
                                self.in_place(*n, value, f);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Mark in `seen` (one flag per member, in order) each member of the object `value` that
    /// `node`'s keywords evaluate, for `owner`'s `unevaluatedProperties`.
    pub(super) fn mark_properties(
        &self,
        node: usize,
        owner: usize,
        value: &Value,
        seen: &mut [bool],
    ) {
        let Value::Object(members) = value else {
            return;
        };
        self.in_place(node, value, &mut |keyword| match keyword {
            Keyword::Properties(properties) => {
                for ((name, _), seen) in members.iter().zip(seen.iter_mut()) {
                    *seen |= properties.iter().any(|(n, _)| n == name);
                }
            }
            Keyword::PatternProperties(patterns) => {
                for ((name, _), seen) in members.iter().zip(seen.iter_mut()) {
                    *seen |= patterns.iter().any(|(p, _)| p.regex.is_match(name));
                }
            }
            Keyword::AdditionalProperties { .. } => seen.fill(true),
            Keyword::UnevaluatedProperties { owner: o, .. } if *o != owner => seen.fill(true),
            _ => {}
        });
    }

    /// Mark in `seen` each item of the array `value` that `node`'s keywords evaluate, for
    /// `owner`'s `unevaluatedItems`.
    pub(super) fn mark_items(&self, node: usize, owner: usize, value: &Value, seen: &mut [bool]) {
        let Value::Array(items) = value else {
            return;
        };
        self.in_place(node, value, &mut |keyword| match keyword {
            Keyword::PrefixItems(nodes) => {
                let n = nodes.len().min(seen.len());
                seen[..n].fill(true);
            }
            Keyword::Items { .. } => seen.fill(true),
            Keyword::Contains { node, .. } => {
                for (item, seen) in items.iter().zip(seen.iter_mut()) {
                    *seen |= self.test(*node, item);
                }
            }
            Keyword::UnevaluatedItems { owner: o, .. } if *o != owner => seen.fill(true),
            _ => {}
        });
    }
}
