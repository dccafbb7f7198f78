use abilities::ability;

/// `sensitive` is a flag.
#[ability(semantic = "EXECUTE")]
fn sign_in(user: String, #[param(sensitive = true)] password: String) -> String {
    format!("{user}{}", password.len())
}

fn main() {}
