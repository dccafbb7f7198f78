use abilities::{State, ability};

struct Db;

/// Comments of a post.
#[ability(semantic = "READ", resource = "posts://{id}/comments")]
fn comments(db: State<Db>, id: u64, page: u32) -> Vec<String> {
    let _ = (db, id, page);
    Vec::new()
}

fn main() {}
