//! MCP-AQL's stages of a call: what the surface adds to the pipeline for one operation.
//!
//! Among the arguments: unknown parameters are refused and an UPDATE's `input` is spread into
//! the ability's arguments ([`Params`]); a collection's query keys are taken out and parsed
//! ([`Query`], which also applies the query to the handler's items when it finishes), or
//! another READ operation's `fields` ([`Select`]). Before
//! the handler: the confirmation gate ([`Gate`]).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::Operation;
use super::query::{self, State};
use crate::AbilityError;
use crate::pipeline::{Call, CallOutput, Stage};

/// Refuse parameters the operation does not take; spread an UPDATE's `input`.
pub(super) struct Params<'t> {
    pub(super) op: &'t Operation,
}

impl Stage for Params<'_> {
    fn check(&self, call: &mut Call<'_>) -> Result<(), AbilityError> {
        super::params::reject_unknown(&self.op.name, &call.args, &self.op.accepted)?;
        let args = std::mem::take(&mut call.args);
        call.args = super::params::update_args(self.op, args)?;
        Ok(())
    }
}

/// `fields` on a READ operation that is not a collection: taken out of the arguments, and
/// applied to the object it returns.
pub(super) struct Select<'t> {
    pub(super) schema: &'t Map<String, Value>,
}

impl Stage for Select<'_> {
    fn check<'s>(&'s self, call: &mut Call<'s>) -> Result<(), AbilityError> {
        let Some(sent) = call.args.remove("fields") else {
            return Ok(());
        };
        let fields = match query::fields(Some(sent), self.schema, &[], query::Fields::Full)? {
            // `standard` keeps a collection item's scalar fields; one object is whole.
            query::Fields::Full | query::Fields::Standard => return Ok(()),
            fields => fields,
        };
        let schema = self.schema;
        call.then(move |output| {
            if let Some(data) = output.take_bare() {
                output.set_bare(query::select_fields(data, &fields, schema));
            }
        });
        Ok(())
    }
}

/// A collection operation's query: parsed from the arguments (the handler may push parts of
/// it down through `CollectionQuery`), applied to the items it returns, its warnings left in
/// the output.
pub(super) struct Query<'t> {
    pub(super) op: &'t Operation,
    pub(super) items: &'t Map<String, Value>,
}

impl Stage for Query<'_> {
    fn check<'s>(&'s self, call: &mut Call<'s>) -> Result<(), AbilityError> {
        let spec = query::parse(
            &mut call.args,
            self.items,
            &self.op.computed,
            &self.op.params,
        )?;
        let state = Arc::new(State::new(spec));
        call.ctx = call.ctx.clone().with_surface_data(Arc::clone(&state));
        let (op, items) = (self.op, self.items);
        call.then(move |output| apply(op, items, &state, output));
        Ok(())
    }
}

/// Apply the query of `state` to the items in `output`: the page, and its warnings.
fn apply(op: &Operation, item_schema: &Map<String, Value>, state: &State, output: &mut CallOutput) {
    let mut items = output.take_bare().unwrap_or(Value::Null);
    // `{items, total}`: the list, and the size of the collection it is from.
    let mut reported = None;
    if op.envelope
        && let Value::Object(map) = &mut items
    {
        reported = map.get("total").and_then(Value::as_u64);
        items = map.remove("items").unwrap_or(Value::Null);
    }
    let (data, warnings) = query::apply(state, items, reported, item_schema, &op.computed);
    output.set_bare(data);
    output.warn(warnings);
}
