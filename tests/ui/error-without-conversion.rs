use abilities::ability;

#[derive(Debug)]
struct MyError;

/// Fails.
#[ability(semantic = "EXECUTE")]
fn fail() -> Result<u8, MyError> {
    Err(MyError)
}

fn main() {}
