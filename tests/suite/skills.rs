//! Skills (SEP-2640) on the wire: `skills/list` pages of whole entries, `skills/get`,
//! `resources/read` of every file with the digest it was listed with, directories, -32602 for
//! what is not served, and skills written from a category byte for byte the same every build.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use abilities_examples::todo;

use crate::support::Lines;
use abilities::skill::Skill;
use abilities::{Server, ServerError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn skill(path: &str, extra: &[(&str, &str)]) -> Skill {
    let name = path.rsplit('/').next().expect("a name");
    let mut files = vec![(
        "SKILL.md".to_owned(),
        format!("---\nname: {name}\ndescription: \"The {name} skill.\"\n---\n# {name}\n")
            .into_bytes(),
    )];
    files.extend(
        extra
            .iter()
            .map(|(p, text)| ((*p).to_owned(), text.as_bytes().to_vec())),
    );
    Skill::new(path, files).expect("a valid skill")
}

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// The bytes `resources/read` serves for `uri` (text as UTF-8, a blob decoded).
async fn read(lines: &mut Lines, id: u64, uri: &str) -> Vec<u8> {
    let read = lines
        .request(id, "resources/read", json!({"uri": uri}))
        .await;
    let content = &read["result"]["contents"][0];
    match content["text"].as_str() {
        Some(text) => text.as_bytes().to_vec(),
        None => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(content["blob"].as_str().expect("text or blob"))
                .expect("base64")
        }
    }
}

#[tokio::test]
async fn pages_hold_whole_entries_and_every_file_matches_its_digest() {
    let mut builder =
        Server::builder().registry(abilities::Registry::collect_in("none").expect("empty"));
    for i in 0..120 {
        builder = builder.skill(skill(
            &format!("team/s{i:03}"),
            &[
                ("docs/a.md", "A"),
                ("docs/deep/b.txt", "B"),
                ("data.bin", "\u{0}\u{1}"),
            ],
        ));
    }
    let server = builder.build().expect("valid");
    let mut lines = Lines::start(&server);
    let init = lines
        .request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    let init = &init["result"];
    lines
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await;
    assert_eq!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
    assert!(init["capabilities"]["resources"].is_object());

    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut id = 10;
    loop {
        id += 1;
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = lines.request(id, "skills/list", params).await;
        for entry in page["result"]["skills"].as_array().expect("skills") {
            // Whole: the SKILL.md and every file of the skill, on this page.
            assert_eq!(
                entry["resources"].as_array().map(Vec::len),
                Some(4),
                "{entry}"
            );
            seen.push(entry["uri"].as_str().expect("uri").to_owned());
        }
        match page["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 120);
    let mut unique = seen.clone();
    unique.dedup();
    assert_eq!(unique.len(), 120, "no entry twice");

    // Every file listed reads back with the digest and size it was listed with.
    let got = lines
        .request(
            200,
            "skills/get",
            json!({"uri": "skill://team/s007/SKILL.md"}),
        )
        .await;
    let entry = &got["result"]["skill"];
    assert_eq!(
        entry["frontmatter"],
        json!({"name": "s007", "description": "The s007 skill."})
    );
    let mut id = 300;
    for resource in entry["resources"].as_array().expect("resources") {
        id += 1;
        let bytes = read(&mut lines, id, resource["uri"].as_str().expect("uri")).await;
        assert_eq!(resource["digest"], digest(&bytes), "{resource}");
        assert_eq!(resource["size"], bytes.len(), "{resource}");
    }
    let markdown = lines
        .request(
            400,
            "resources/read",
            json!({"uri": "skill://team/s007/SKILL.md"}),
        )
        .await;
    assert_eq!(
        markdown["result"]["contents"][0]["mimeType"],
        "text/markdown"
    );

    // A directory lists its direct children; a sub-directory says so.
    let dir = lines
        .request(
            401,
            "resources/directory/read",
            json!({"uri": "skill://team/s007/docs"}),
        )
        .await;
    assert_eq!(
        dir["result"]["resources"],
        json!([
            {"uri": "skill://team/s007/docs/a.md", "name": "a.md", "mimeType": "text/markdown", "size": 1},
            {"uri": "skill://team/s007/docs/deep", "name": "deep", "mimeType": "inode/directory"}
        ])
    );

    // What is not served: -32602.
    for (method, params) in [
        ("skills/get", json!({"uri": "skill://team/nope/SKILL.md"})),
        (
            "resources/directory/read",
            json!({"uri": "skill://team/s007/SKILL.md"}),
        ),
        (
            "resources/directory/read",
            json!({"uri": "skill://nowhere"}),
        ),
        ("skills/list", json!({"cursor": "not-a-cursor"})),
    ] {
        id += 1;
        let refused = lines.request(id, method, params.clone()).await;
        assert_eq!(
            refused["error"]["code"], -32602,
            "{method} {params}: {refused}"
        );
    }
}

#[tokio::test]
async fn skill_files_are_resources_and_a_changed_file_changes_its_digest() {
    let listed = |text: &'static str| async move {
        let server = Server::builder()
            .registry(abilities::Registry::collect_in("none").expect("empty"))
            .skill(skill("pdf", &[("forms.md", text)]))
            .build()
            .expect("valid");
        let mut lines = Lines::initialized(&server).await;
        let list = lines.request(2, "resources/list", json!({})).await;
        let got = lines
            .request(3, "skills/get", json!({"uri": "skill://pdf/SKILL.md"}))
            .await;
        (list, got["result"]["skill"]["resources"].clone())
    };
    let (list, before) = listed("one").await;
    assert_eq!(
        list["result"]["resources"],
        json!([{"uri": "skill://pdf/SKILL.md", "name": "pdf", "description": "The pdf skill.",
                "mimeType": "text/markdown", "size": 54}])
    );
    let (_, after) = listed("two").await;
    assert_eq!(before[1]["uri"], "skill://pdf/forms.md");
    assert_ne!(before[1]["digest"], after[1]["digest"]);
    assert_eq!(
        before[0]["digest"], after[0]["digest"],
        "SKILL.md did not change"
    );
}

#[tokio::test]
async fn two_skills_with_one_path_fail_the_build() {
    let built = Server::builder()
        .registry(abilities::Registry::collect_in("none").expect("empty"))
        .skill(skill("pdf", &[]))
        .skill(skill("pdf", &[]))
        .build();
    assert!(
        matches!(built, Err(ServerError::Skill(_))),
        "{:?}",
        built.err()
    );
}

#[tokio::test]
async fn a_category_skill_is_written_from_its_abilities_the_same_every_build() {
    let text = || async {
        let dir = std::env::temp_dir().join(format!("abilities-skills-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let server = Server::builder()
            .registry(todo::registry().expect("valid"))
            .state(todo::TodoDb::open(&dir.join("todo.db")).expect("opens"))
            .category_skills([(
                "todos",
                "Keep a todo list: add, find, change and clear todos.",
            )])
            .build()
            .expect("valid");
        let mut lines = Lines::initialized(&server).await;
        let bytes = read(&mut lines, 2, "skill://todos/SKILL.md").await;
        let got = lines
            .request(3, "skills/get", json!({"uri": "skill://todos/SKILL.md"}))
            .await;
        (
            String::from_utf8(bytes).expect("UTF-8"),
            got["result"]["skill"]["resources"][0]["digest"].clone(),
        )
    };
    let (first, first_digest) = text().await;
    let (second, second_digest) = text().await;
    assert_eq!(first, second, "byte for byte");
    assert_eq!(first_digest, second_digest);
    assert_eq!(first_digest, digest(first.as_bytes()));
    // What a model needs: each ability, its semantic, parameters, result, confirmation.
    for expected in [
        "name: todos\n",
        "description: \"Keep a todo list: add, find, change and clear todos.\"",
        "## `delete_todo`",
        "- What it does: DELETE (danger: destructive).",
        "Needs confirmation",
        "- `id` (integer, required): The todo id.",
        "Returns: an object with `id` (integer), `title` (string), `completed` (boolean), `priority` (string).",
        "May run in the background as a task",
    ] {
        assert!(first.contains(expected), "missing {expected:?} in\n{first}");
    }
}

#[tokio::test]
async fn mcp_aql_introspection_names_the_skills_to_read() {
    let server = Server::builder()
        .registry(abilities::Registry::collect_in("none").expect("empty"))
        .skill(skill("pdf", &[]))
        .surface(abilities::Surface::aql_single())
        .build()
        .expect("valid");
    let mut lines = Lines::initialized(&server).await;
    let list = lines
        .call(
            2,
            "mcp_aql",
            json!({"operation": "introspect", "params": {"query": "operations"}}),
        )
        .await;
    let envelope: Value =
        serde_json::from_str(list["content"][0]["text"].as_str().expect("text")).expect("JSON");
    crate::support::assert_aql_introspection(&envelope);
    assert_eq!(
        envelope["data"]["_protocol"]["skills"],
        json!([{"uri": "skill://pdf/SKILL.md", "description": "The pdf skill."}])
    );
}
