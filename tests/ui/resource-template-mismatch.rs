use abilities::ability;

/// A post.
#[ability(semantic = "READ", resource = "posts://{post_id}/comments")]
fn comments(id: u64) -> Vec<String> {
    vec![id.to_string()]
}

fn main() {}
