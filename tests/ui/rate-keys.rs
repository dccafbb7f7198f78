use abilities::ability;

/// A rate without a period.
#[ability(semantic = "READ", rate = "10")]
fn no_period() -> u8 {
    1
}

/// No calls at all.
#[ability(semantic = "READ", rate = "0/min")]
fn no_calls() -> u8 {
    1
}

/// An unknown unit.
#[ability(semantic = "READ", rate = "10/fortnight")]
fn unknown_unit() -> u8 {
    1
}

/// A number where a string is expected.
#[ability(semantic = "READ", rate = 10)]
fn not_a_string() -> u8 {
    1
}

fn main() {}
