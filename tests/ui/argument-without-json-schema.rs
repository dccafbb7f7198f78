use abilities::ability;

#[derive(serde::Deserialize)]
struct Point {
    x: i64,
}

/// Takes a point with no schema.
#[ability(semantic = "READ", flatten)]
fn take(point: Point) -> i64 {
    point.x
}

fn main() {}
