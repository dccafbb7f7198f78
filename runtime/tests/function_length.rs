//! No function in `runtime/src` is over 80 lines: one concern a function, read at a glance.
//! The validator's keyword tables and the MCP-AQL query parser are tables by nature; tests
//! are left out.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

mod common;

const LIMIT: usize = 80;

/// Tables by nature: a match arm per keyword, a parser's grammar.
const TABLES: [&str; 3] = [
    "validate/walk.rs keyword",
    "validate/schema.rs keywords",
    "surface/aql/query/parse.rs parse",
];

/// The name of the function a line declares, if it does (rustfmt's layout: the signature
/// starts the line, the body closes at the same indentation).
fn declared(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for word in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    Some(&name[..end])
}

/// Every function's length in lines, by `file name`, outside test modules.
fn lengths(root: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (file, path) in common::named_rust_files(root) {
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Tests: a file of them, or what follows `#[cfg(test)]` at the top level.
        let end = lines
            .iter()
            .position(|l| *l == "#[cfg(test)]")
            .unwrap_or(lines.len());
        for (at, line) in lines[..end].iter().enumerate() {
            let Some(name) = declared(line) else {
                continue;
            };
            if line.trim_end().ends_with(';') {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let close = format!("{}}}", " ".repeat(indent));
            let Some(last) = lines[at..end].iter().position(|l| *l == close) else {
                continue;
            };
            let key = format!("{file} {name}");
            let length = last + 1;
            let longest = out.entry(key).or_insert(0);
            *longest = (*longest).max(length);
        }
    }
    out
}

#[test]
fn no_function_grows_past_eighty_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lengths = lengths(&root);
    assert!(lengths.len() > 500, "{} functions found", lengths.len());
    let mut report = String::new();
    for (key, &length) in &lengths {
        if length <= LIMIT
            || TABLES.contains(&key.as_str())
            || key.starts_with("validate/tests.rs")
            || key.starts_with("validate/derived.rs")
            || key.starts_with("validate/suite.rs")
        {
            continue;
        }
        report.push_str(&format!("  runtime/src/{key}: {length} lines\n"));
    }
    assert!(
        report.is_empty(),
        "functions over {LIMIT} lines (split them into functions of one concern):\n{report}"
    );
}
