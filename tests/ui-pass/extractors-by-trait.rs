//! Extractors are chosen by trait, not by name: a user's own `State` is a value, a renamed
//! `abilities::State` and a user-defined extractor are extractors.

use abilities::{AbilityError, Context, extract::FromContext, Registry, State as Shared, ability};

/// A type of the user's that happens to be called `State`: a value parameter.
#[derive(serde::Deserialize, schemars::JsonSchema)]
enum State {
    Open,
    Closed,
}

struct Db(u32);

/// The caller's principal, taken from the context.
struct Principal(String);

impl FromContext for Principal {
    fn from_context(ctx: &Context) -> Result<Self, AbilityError> {
        Ok(Principal(ctx.caller().principal().to_owned()))
    }
}

/// Count issues in a state.
#[ability(semantic = "READ")]
fn count(db: Shared<Db>, who: Principal, state: State) -> String {
    let open = matches!(state, State::Open);
    let Db(n) = &*db;
    format!("{n} {} {open}", who.0)
}

fn main() {
    let registry = Registry::collect().expect("the registry builds");
    let count = registry.get("count").expect("registered");
    let properties = count.input_schema()["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect::<Vec<_>>());
    assert_eq!(properties, Some(vec!["state".to_owned()]));
    assert_eq!(count.requirements().len(), 1);
    assert!(count.requirements()[0].type_name().ends_with("Db"));
}
