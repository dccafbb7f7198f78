//! [`CallOutput`]: what a call produced, the handler's bare value kept until a surface asks
//! for the wire form.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::warning::Warning;
use crate::{Content, Prompt};

/// The whole result of a call: the structured value (kept as the handler returned it, and
/// wrapped under `result` on the wire where the output schema says so) and any content
/// blocks of a [`Rich`](crate::Rich) or [`Contents`](crate::Contents) return.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutput {
    /// The handler's value, bare.
    value: Option<Value>,
    /// The wire wraps `value` under `result`.
    wrap: bool,
    content: Option<Vec<Content>>,
    // The rare parts are boxed: a call's output moves through every stage's future.
    prompt: Option<Box<Prompt>>,
    /// The wire form, made only when [`structured`](Self::structured) asks for it.
    wire: OnceLock<Option<Box<Value>>>,
    /// What stages noted beside the result.
    /// Boxed: an output moves through every stage's future, and most have none.
    #[allow(
        clippy::box_collection,
        reason = "one pointer, not three, in a value every call moves"
    )]
    warnings: Option<Box<Vec<Warning>>>,
}

impl CallOutput {
    pub(crate) fn new(
        value: Option<Value>,
        wrap: bool,
        content: Option<Vec<Content>>,
        prompt: Option<Prompt>,
    ) -> Self {
        Self {
            value,
            wrap,
            content,
            prompt: prompt.map(Box::new),
            wire: OnceLock::new(),
            warnings: None,
        }
    }

    /// A structured value that is its own wire form (an object).
    pub(crate) fn structured_only(value: Value) -> Self {
        Self::new(Some(value), false, None, None)
    }

    /// The structured result as the wire carries it (always an object), absent for
    /// content-only results.
    pub fn structured(&self) -> Option<&Value> {
        self.wire
            .get_or_init(|| self.value.clone().map(|v| Box::new(wire(v, self.wrap))))
            .as_deref()
    }

    /// The handler's structured value as it returned it (not wrapped), absent for
    /// content-only results.
    pub fn value(&self) -> Option<&Value> {
        self.value.as_ref()
    }

    /// The handler's structured value, to change (a middleware's redactor): the wire form
    /// is made again from it.
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        self.wire = OnceLock::new();
        self.value.as_mut()
    }

    /// Content blocks beyond the JSON text, if the ability returned any.
    pub fn content(&self) -> Option<&[Content]> {
        self.content.as_deref()
    }

    /// The messages of a [`Prompt`] return.
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_deref()
    }

    /// Take the bare value out (a finishing stage replaces it).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn take_bare(&mut self) -> Option<Value> {
        self.wire = OnceLock::new();
        self.value.take()
    }

    /// Replace the bare value (a surface's finishing stage: a collection query's page).
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn set_bare(&mut self, value: Value) {
        self.value = Some(value);
        self.wire = OnceLock::new();
    }

    /// Add what a stage noted beside the result.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn warn(&mut self, warnings: impl IntoIterator<Item = Warning>) {
        self.warnings.get_or_insert_default().extend(warnings);
    }

    /// What stages noted beside the result, taken out.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "used by the MCP-AQL surface")
    )]
    pub(crate) fn take_warnings(&mut self) -> Vec<Warning> {
        self.warnings.take().map(|w| *w).unwrap_or_default()
    }

    /// The bare value and the content blocks, for surfaces that show the value as it is.
    pub(crate) fn into_bare(self) -> (Option<Value>, Option<Vec<Content>>, Option<Prompt>) {
        (self.value, self.content, self.prompt.map(|p| *p))
    }

    /// The wire form (wrapped where it must be) and the content blocks.
    pub(crate) fn into_wire(self) -> (Option<Value>, Option<Vec<Content>>) {
        let wrap = self.wrap;
        (self.value.map(|v| wire(v, wrap)), self.content)
    }
}

fn wire(value: Value, wrap: bool) -> Value {
    if wrap {
        Value::Object(Map::from_iter([("result".to_owned(), value)]))
    } else {
        value
    }
}
