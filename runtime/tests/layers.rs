//! The layer check: every path into `crate::` (or `super::`) in `runtime/src` points to a room
//! on its own floor or below, as the table in `ARCHITECTURE.md` orders them, and no circle of
//! imports holds more than two files; the same for `bridge/src` and the bridge's table.
//!
//! Paths are read from the source text: `use` trees, paths written inline, and names used
//! through the crate root's re-exports (resolved to the module that defines them). Comments and
//! string literals are skipped; a module's own children, named without `crate::` or `super::`,
//! are read as part of it. `LAYERS_VERBOSE=1` prints every arrow between rooms and every
//! circle.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

mod common;

/// A room of the table: a module and its descendants, on a floor.
struct Room {
    module: Vec<String>,
    floor: usize,
    name: String,
}

struct Table {
    rooms: Vec<Room>,
}

impl Table {
    /// The table under `heading` in `ARCHITECTURE.md`: rows `| <floor> <name> | <rooms in
    /// backticks> | ... |`.
    fn read(text: &str, heading: &str) -> Table {
        let mut rooms = Vec::new();
        let mut in_table = false;
        for line in text.lines() {
            if line == heading {
                in_table = true;
                continue;
            }
            if in_table && line.starts_with("## ") {
                break;
            }
            if !in_table || !line.starts_with("| ") {
                continue;
            }
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let Some(floor) = cells
                .get(1)
                .and_then(|c| c.split_whitespace().next())
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            let rooms_cell = cells.get(2).copied().unwrap_or_default();
            for name in rooms_cell.split('`').skip(1).step_by(2) {
                if name.starts_with("abilities-") {
                    continue;
                }
                let trimmed = name.trim_end_matches('/');
                let module = trimmed.split('/').map(str::to_owned).collect();
                rooms.push(Room {
                    module,
                    floor,
                    name: name.to_owned(),
                });
            }
        }
        assert!(
            rooms.len() > 3,
            "ARCHITECTURE.md has no layer table under `{heading}`"
        );
        Table { rooms }
    }

    /// The room a module belongs to: the longest room that is a prefix of its path.
    fn room(&self, module: &[String]) -> Option<&Room> {
        self.rooms
            .iter()
            .filter(|r| module.starts_with(&r.module))
            .max_by_key(|r| r.module.len())
    }
}

/// One `runtime/src` file: its module path and text without comments and strings.
struct Source {
    file: String,
    module: Vec<String>,
    code: String,
}

fn sources(root: &Path) -> Vec<Source> {
    common::named_rust_files(root)
        .into_iter()
        .map(|(rel, path)| {
            let mut module: Vec<String> = rel
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_owned)
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let code = strip(&fs::read_to_string(&path).unwrap());
            Source {
                file: rel,
                module,
                code,
            }
        })
        .collect()
}

/// The text with comments, string and char literals blanked out (newlines kept, so line
/// numbers hold).
fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &b in s {
            out.push(if b == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == b'r'
            && (rest.starts_with(b"r\"") || rest.starts_with(b"r#"))
            && (i == 0 || !is_ident(bytes[i - 1]))
        {
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = 2 + hashes;
            let end = rest[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(rest.len(), |p| start + p + close.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a): only the former closes.
            let close = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&b| b == b'\'').map(|p| p + 3)
            } else if rest.get(2) == Some(&b'\'') {
                Some(3)
            } else {
                None
            };
            match close {
                Some(end) => {
                    blank(&mut out, &rest[..end]);
                    i += end;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Path,
    Open,
    Close,
    Comma,
    Other,
}

/// Tokens with their line numbers.
fn tokens(code: &str) -> Vec<(Token, usize)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            i += 1;
        } else if b.is_ascii_whitespace() {
            i += 1;
        } else if is_ident(b) {
            let start = i;
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            out.push((Token::Ident(code[start..i].to_owned()), line));
        } else if code[i..].starts_with("::") {
            out.push((Token::Path, line));
            i += 2;
        } else {
            out.push((
                match b {
                    b'{' => Token::Open,
                    b'}' => Token::Close,
                    b',' => Token::Comma,
                    _ => Token::Other,
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// Every path a file names that starts at `crate` or `super`, as absolute segments, with its
/// line. `use` trees are expanded into one path per leaf.
fn paths(source: &Source) -> Vec<(Vec<String>, usize)> {
    let toks = tokens(&source.code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let start_of_path = i == 0 || toks[i - 1].0 != Token::Path;
        let base = match tok {
            Token::Ident(name) if start_of_path && name == "crate" => Some(Vec::new()),
            Token::Ident(name) if start_of_path && name == "super" => {
                let mut m = source.module.clone();
                // `super` from a file is its parent module; `super::super` goes further up.
                m.pop();
                let mut j = i;
                while toks.get(j + 1).map(|t| &t.0) == Some(&Token::Path)
                    && toks.get(j + 2).map(|t| &t.0) == Some(&Token::Ident("super".into()))
                {
                    m.pop();
                    j += 2;
                }
                i = j;
                Some(m)
            }
            _ => None,
        };
        let Some(base) = base else {
            i += 1;
            continue;
        };
        if toks.get(i + 1).map(|t| &t.0) != Some(&Token::Path) {
            i += 1;
            continue;
        }
        let (next, leaves) = tree(&toks, i + 2);
        for leaf in leaves {
            let mut full = base.clone();
            full.extend(leaf);
            out.push((full, *line));
        }
        i = next;
    }
    out
}

/// A use tree (or an inline path) starting at `i`: its leaves' segments and where it ends.
fn tree(toks: &[(Token, usize)], mut i: usize) -> (usize, Vec<Vec<String>>) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Token::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Token::Path) {
                    i += 1;
                    continue;
                }
                return (i, vec![prefix]);
            }
            Some(Token::Open) => {
                i += 1;
                let mut leaves = Vec::new();
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Token::Close) => {
                            i += 1;
                            break;
                        }
                        Some(Token::Comma) => i += 1,
                        None => break,
                        _ => {
                            let (next, inner) = tree(toks, i);
                            for leaf in inner {
                                let mut full = prefix.clone();
                                full.extend(leaf);
                                leaves.push(full);
                            }
                            i = if next == i { i + 1 } else { next };
                            // Skip `as name` and anything else up to the next `,` or `}`.
                            while !matches!(
                                toks.get(i).map(|t| &t.0),
                                Some(Token::Comma | Token::Close) | None
                            ) {
                                i += 1;
                            }
                        }
                    }
                }
                return (i, leaves);
            }
            // `*` and anything else: the prefix itself is what is named.
            _ => return (i, vec![prefix]),
        }
    }
}

/// The crate root's re-exports: a name to the module it comes from.
fn reexports(lib: &Source, modules: &BTreeSet<Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let toks = tokens(&lib.code);
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i + 2 < toks.len() {
        if toks[i].0 == Token::Ident("pub".into()) && toks[i + 1].0 == Token::Ident("use".into()) {
            let (next, leaves) = tree(&toks, i + 2);
            for leaf in leaves {
                let module = longest_module(&leaf, modules);
                if !module.is_empty()
                    && let Some(name) = leaf.last()
                {
                    out.insert(name.clone(), module);
                }
            }
            i = next;
        } else {
            i += 1;
        }
    }
    out
}

fn longest_module(path: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

struct Arrow {
    from_file: String,
    to_file: String,
    line: usize,
    path: String,
    from_room: String,
    from_floor: usize,
    to_room: String,
    to_floor: usize,
}

fn arrows(table: &Table, all: &[Source]) -> Vec<Arrow> {
    let modules: BTreeSet<Vec<String>> = all.iter().map(|s| s.module.clone()).collect();
    let lib = all.iter().find(|s| s.module.is_empty()).expect("lib.rs");
    let roots = reexports(lib, &modules);
    let file_of: BTreeMap<&Vec<String>, &str> =
        all.iter().map(|s| (&s.module, s.file.as_str())).collect();
    let mut out = Vec::new();
    for source in all.iter().filter(|s| !s.module.is_empty()) {
        let from = table.room(&source.module).unwrap_or_else(|| {
            panic!(
                "{} is in no room of ARCHITECTURE.md's layer table",
                source.file
            )
        });
        for (path, line) in paths(source) {
            let mut module = longest_module(&path, &modules);
            if module.is_empty() {
                // A name the crate root re-exports, or a macro or item of the root itself.
                match path.first().and_then(|n| roots.get(n)) {
                    Some(m) => module = m.clone(),
                    None => continue,
                }
            }
            if module == source.module {
                continue;
            }
            let Some(to) = table.room(&module) else {
                panic!(
                    "{}:{line}: crate::{} is in no room",
                    source.file,
                    path.join("::")
                );
            };
            out.push(Arrow {
                from_file: source.file.clone(),
                to_file: file_of[&module].to_owned(),
                line,
                path: path.join("::"),
                from_room: from.name.clone(),
                from_floor: from.floor,
                to_room: to.name.clone(),
                to_floor: to.floor,
            });
        }
    }
    out
}

/// Strongly connected components (Tarjan) of the file graph, largest first.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let mut out = s.out;
    out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    out
}

/// The crates checked: the heading of each one's table in `ARCHITECTURE.md`, and its sources.
const CRATES: [(&str, &str); 2] = [
    ("## Layers", "runtime/src"),
    ("## The bridge's layers", "bridge/src"),
];

fn load(heading: &str, dir: &str) -> (Table, Vec<Source>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let table = Table::read(
        &fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap(),
        heading,
    );
    (table, sources(&root.join(dir)))
}

#[test]
fn imports_point_down_the_layer_table() {
    let mut report = String::new();
    for (heading, dir) in CRATES {
        report.push_str(&upward(heading, dir));
    }
    assert!(
        report.is_empty(),
        "imports up the layer tables of ARCHITECTURE.md:\n{report}"
    );
}

/// Every import up the table under `heading`, one line each.
fn upward(heading: &str, dir: &str) -> String {
    let (table, all) = load(heading, dir);
    let arrows = arrows(&table, &all);
    if std::env::var_os("LAYERS_VERBOSE").is_some() {
        let mut seen = BTreeSet::new();
        for a in &arrows {
            if a.from_room != a.to_room && seen.insert((a.from_file.clone(), a.to_file.clone())) {
                println!(
                    "{} ({}) -> {} ({})",
                    a.from_file, a.from_floor, a.to_file, a.to_floor
                );
            }
        }
    }
    let mut report = String::new();
    for a in arrows.iter().filter(|a| a.to_floor > a.from_floor) {
        writeln!(
            report,
            "  {dir}/{}:{}: crate::{} points up: `{}` (floor {}) imports `{}` (floor {})",
            a.from_file, a.line, a.path, a.from_room, a.from_floor, a.to_room, a.to_floor
        )
        .unwrap();
    }
    report
}

#[test]
fn no_circle_of_imports_holds_more_than_two_files() {
    for (heading, dir) in CRATES {
        circles_of(heading, dir);
    }
}

/// Fail on a circle of more than two files among the sources of `dir`.
fn circles_of(heading: &str, dir: &str) {
    let (table, all) = load(heading, dir);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for a in arrows(&table, &all) {
        edges.entry(a.from_file).or_default().insert(a.to_file);
    }
    let all = circles(&edges);
    if std::env::var_os("LAYERS_VERBOSE").is_some() {
        for c in all.iter().filter(|c| c.len() > 1) {
            println!("circle: {}", c.join(" <-> "));
        }
    }
    let big: Vec<_> = all.into_iter().filter(|c| c.len() > 2).collect();
    let report: String = big
        .iter()
        .map(|c| format!("  {} files: {}\n", c.len(), c.join(", ")))
        .collect();
    assert!(big.is_empty(), "circles of imports in {dir}:\n{report}");
}

#[test]
fn the_checker_reads_use_trees_inline_paths_and_supers() {
    let source = Source {
        file: "a/b.rs".into(),
        module: vec!["a".into(), "b".into()],
        code: strip(
            "use crate::{x::{Y, z::W as V}, q};\n// crate::comment::Ignored\n\
             fn f() { let s = \"crate::in::string\"; crate::inline::Path::new(); super::Sibling; }",
        ),
    };
    let found: Vec<String> = paths(&source)
        .into_iter()
        .map(|(p, _)| p.join("::"))
        .collect();
    assert_eq!(
        found,
        ["x::Y", "x::z::W", "q", "inline::Path::new", "a::Sibling"]
    );
}
