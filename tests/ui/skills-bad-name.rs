// A skill's name breaks the naming rules: a compile error on the path.
fn main() {
    let _ = abilities::skills!("skills/bad-name");
}
