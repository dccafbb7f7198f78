// A SKILL.md without its YAML frontmatter: a compile error on the path.
fn main() {
    let _ = abilities::skills!("skills/no-frontmatter");
}
