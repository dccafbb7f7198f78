//! The rules `#[ability]` checks at compile time and the runtime applies to abilities built at
//! run time, written once: the kinds an ability is written with (semantic, danger, task
//! support), ability names, tool names, URI templates and call rates.
//!
//! Depend on `abilities`; this crate is an implementation detail, version-pinned by it.

mod kinds;
mod name;
mod rate;
mod uri;

pub use kinds::{Danger, Semantic, TaskSupport, one_of};
pub use name::{MAX_ABILITY_NAME, MAX_TOOL_NAME, check_ability_name, operation_name, tool_name};
pub use rate::{RateError, RateProblem, gcra, parse_rate};
pub use uri::{UriTemplate, percent_decode, template_variables};
