// `skills!` embeds every skill under a directory, at its path below it, with each file's
// digest computed at compile time: the same digest the bytes have at run time.
use sha2::{Digest, Sha256};

fn main() {
    let skills = abilities::skills!("skills/good").expect("checked at compile time");
    assert_eq!(skills.len(), 1);
    let skill = &skills[0];
    assert_eq!(skill.uri(), "skill://acme/pdf-tools/SKILL.md");
    assert_eq!(skill.description(), "Fill PDF forms.");
    let paths: Vec<&str> = skill.files().iter().map(|f| f.path()).collect();
    assert_eq!(paths, ["SKILL.md", "reference/forms.md"]);
    for file in skill.files() {
        let hash = Sha256::digest(file.bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(file.digest(), format!("sha256:{hex}"));
    }
    abilities::Server::builder()
        .registry(abilities::Registry::collect_in("none").expect("empty"))
        .skills(skills)
        .build()
        .expect("served");
}
