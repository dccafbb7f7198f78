//! One map of the project: the facade (`src/`) re-exports exactly what the runtime's root
//! does, and the guide's architecture chapter names every room of `ARCHITECTURE.md`'s layer
//! tables (a room added to the map and left out of the chapter, or the other way, fails).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a test")]

use std::collections::BTreeSet;
use std::path::PathBuf;

fn read(path: &str) -> String {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text without `//` comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names a `use` tree brings in (`a::{b, c::d as e}` gives `b`, `e`).
fn tree_names(tree: &str, out: &mut BTreeSet<String>) {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let last = tree.rsplit("::").next().unwrap_or(tree).trim();
        let name = last.rsplit(" as ").next().unwrap_or(last).trim();
        if !name.is_empty() && name != "self" {
            out.insert(name.to_owned());
        }
        return;
    };
    let inner = &tree[open + 1..tree.rfind('}').expect("a closing brace")];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                tree_names(&inner[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    tree_names(&inner[start..], out);
}

/// Every name `pub use <prefix>...;` brings into `text`, and with `modules`, every `pub mod`.
fn exported(text: &str, prefix: &str, modules: bool) -> BTreeSet<String> {
    let text = code(text);
    let mut out = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("pub use ") {
        let item = &rest[at + "pub use ".len()..];
        let end = item.find(';').expect("a `use` ends with `;`");
        if let Some(tree) = item[..end].trim().strip_prefix(prefix) {
            tree_names(tree, &mut out);
        }
        rest = &item[end..];
    }
    if modules {
        for line in text.lines() {
            if let Some(name) = line.trim().strip_prefix("pub mod ") {
                out.insert(name.trim_end_matches([';', '{', ' ']).to_owned());
            }
        }
    }
    out
}

#[test]
fn the_facade_reexports_exactly_the_runtimes_public_face() {
    let runtime = exported(&read("runtime/src/lib.rs"), "", true);
    let mut facade = BTreeSet::new();
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../src"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        facade.extend(exported(&text, "abilities_runtime::", false));
        facade.extend(exported(&text, "abilities_runtime", false));
    }
    assert!(runtime.len() > 50, "{runtime:?}");
    let missing: Vec<_> = runtime.difference(&facade).collect();
    let extra: Vec<_> = facade.difference(&runtime).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the runtime's root exports {missing:?} that the facade does not; the facade re-exports \
         {extra:?} that the runtime's root does not"
    );
}

/// The rooms of the layer table under `heading` in `ARCHITECTURE.md`, in backticks, crates
/// left out.
fn rooms(map: &str, heading: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut lines = map.lines().skip_while(|line| *line != heading).skip(1);
    for line in lines.by_ref().take_while(|line| !line.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let floor = cells.get(1).and_then(|c| c.split_whitespace().next());
        if floor.is_none_or(|f| f.parse::<usize>().is_err()) {
            continue;
        }
        for room in cells[2].split('`').skip(1).step_by(2) {
            if !room.starts_with("abilities-") {
                out.insert(room.trim_end_matches('/').to_owned());
            }
        }
    }
    out
}

/// What `text` names in backticks.
fn named(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.trim_end_matches('/').to_owned())
        .collect()
}

#[test]
fn the_architecture_chapter_names_every_room_of_the_map() {
    let map = read("ARCHITECTURE.md");
    let chapter = read("docs/src/architecture.md");
    // The bridge's rooms are named in the chapter's paragraph on the bridge, the runtime's
    // anywhere else in it.
    let start = chapter
        .find("- **The bridge**")
        .expect("a paragraph on the bridge");
    // It ends at the next item or paragraph.
    let end = ["\n- ", "\n\n"]
        .iter()
        .filter_map(|next| chapter[start + 2..].find(next))
        .min()
        .map_or(chapter.len(), |at| start + 2 + at);
    let (bridge, runtime) = (
        &chapter[start..end],
        format!("{}{}", &chapter[..start], &chapter[end..]),
    );
    for (heading, text) in [
        ("## Layers", runtime.as_str()),
        ("## The bridge's layers", bridge),
    ] {
        let rooms = rooms(&map, heading);
        assert!(rooms.len() > 5, "{heading}: {rooms:?}");
        let named = named(text);
        let missing: Vec<_> = rooms.iter().filter(|r| !named.contains(*r)).collect();
        assert!(
            missing.is_empty(),
            "docs/src/architecture.md does not name these rooms of ARCHITECTURE.md's \
             `{heading}`: {missing:?}"
        );
    }
}
