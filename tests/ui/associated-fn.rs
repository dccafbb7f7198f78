use abilities::ability;

struct Posts;

impl Posts {
    /// Count the posts.
    #[ability(semantic = "READ")]
    fn count(status: String) -> usize {
        status.len()
    }
}

fn main() {}
