use abilities::ability;

#[derive(schemars::JsonSchema)]
struct Point {
    x: i64,
}

/// Takes a point that cannot be deserialized.
#[ability(semantic = "READ", flatten)]
fn take(point: Point) -> i64 {
    point.x
}

fn main() {}
