use abilities::ability;

struct Greeter;

impl Greeter {
    /// Says hi.
    #[ability(semantic = "READ")]
    fn hello(&self, name: String) -> String {
        name
    }
}

fn main() {}
