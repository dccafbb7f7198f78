use abilities::ability;

struct Point {
    x: i64,
}

/// Takes a point that is neither a value nor an extractor.
#[ability(semantic = "READ")]
fn take(label: String, point: Point) -> i64 {
    label.len() as i64 + point.x
}

fn main() {}
