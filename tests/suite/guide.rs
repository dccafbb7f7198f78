//! The guide (`docs/src`, an mdBook), the README and the other documents a reader follows:
//! every relative link reaches a file that exists, every `#anchor` a heading of that file, and
//! the book's `SUMMARY.md` lists every chapter there is. (Snippets are doc tests of the root
//! crate; `.ci/run` also builds the book with `mdbook build docs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a test")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    // The tests package is a folder of the repository.
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The documents checked: the book's chapters and the repository's top-level documents.
fn documents() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.extend(
        ["README.md", "ARCHITECTURE.md", "bridge/README.md"]
            .iter()
            .map(|f| root().join(f)),
    );
    files.sort();
    files
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code spans.
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// `[text](target)` targets in prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].trim().to_owned());
            rest = &rest[end..];
        }
    }
    found
}

/// The anchors of a document's headings, as GitHub and mdBook make them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        out.insert(slug);
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && target.extension().is_some_and(|e| e == "md")
            {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap());
                if !headings.contains(anchor) {
                    broken.push(format!("{}: {link} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_summary_lists_every_chapter() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let chapters: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "SUMMARY.md")
        .collect();
    assert_eq!(listed, chapters, "SUMMARY.md and docs/src disagree");
    assert!(Path::new(&src).join("../book.toml").exists());
}
