//! Sensitive arguments: which of an ability's arguments are (`#[param(sensitive)]`,
//! [`AbilityBuilder::sensitive`](super::AbilityBuilder::sensitive)), and their values hidden.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{Ability, Input};
use crate::normalize::InputShape;

/// In [`Ability::sensitive`], the whole input: the arguments object is the sensitive value.
pub(crate) const WHOLE_INPUT: &str = "";

impl Ability {
    /// `args` with every sensitive value replaced by `"(sensitive)"`: the top-level ones, the
    /// same names inside an MCP-AQL `input` object, or all of them for a sensitive input.
    pub(crate) fn redacted(&self, args: &Map<String, Value>) -> Option<Map<String, Value>> {
        if self.sensitive.is_empty() {
            return None;
        }
        let hidden = || Value::from("(sensitive)");
        let mut shown = args.clone();
        if self.sensitive.iter().any(|name| name == WHOLE_INPUT) {
            for value in shown.values_mut() {
                *value = hidden();
            }
            return Some(shown);
        }
        for name in &self.sensitive {
            if let Some(value) = shown.get_mut(&**name) {
                *value = hidden();
            }
            if let Some(Value::Object(input)) = shown.get_mut("input")
                && let Some(value) = input.get_mut(&**name)
            {
                *value = hidden();
            }
        }
        Some(shown)
    }
}

/// The wire names of the sensitive arguments: the marked parameters, the `input` key of a
/// sensitive wrapped value, or [`WHOLE_INPUT`] when the arguments are the sensitive value.
pub(super) fn sensitive_arguments(
    input: &Input,
    shape: &InputShape,
    mut named: Vec<Cow<'static, str>>,
) -> Vec<Cow<'static, str>> {
    match input {
        Input::Object(properties) => named.extend(
            properties
                .iter()
                .filter(|p| p.sensitive)
                .map(|p| Cow::Borrowed(p.name)),
        ),
        Input::Value {
            sensitive: true, ..
        } => match shape {
            InputShape::Wrapped { key, .. } => named.push(Cow::Borrowed(*key)),
            // The arguments are the value, whatever its shape (a union lists no properties).
            _ => named.push(Cow::Borrowed(WHOLE_INPUT)),
        },
        _ => {}
    }
    named.sort();
    named.dedup();
    named
}
