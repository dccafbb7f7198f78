//! `skills!(crate = "...")`: the generated code finds the framework through a re-export.

mod facade {
    pub use abilities;
}

fn main() {
    let skills = facade::abilities::skills!(crate = "facade::abilities", "skills/good")
        .expect("checked at compile time");
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].uri(), "skill://acme/pdf-tools/SKILL.md");
}
