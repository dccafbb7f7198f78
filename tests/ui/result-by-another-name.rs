use abilities::ability;

/// An error that happens to be serializable: read as a value, it would be served as data.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Oops;

impl From<Oops> for abilities::AbilityError {
    fn from(_: Oops) -> Self {
        abilities::AbilityError::failed("oops")
    }
}

type Answer = Result<u8, Oops>;

/// Counts.
#[ability(semantic = "READ")]
fn count() -> Answer {
    Ok(1)
}

fn main() {}
