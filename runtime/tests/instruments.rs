//! The `metrics` and `otel` features stay in their rooms: a `cfg` naming either appears only
//! in the rooms that count and trace, in `instruments/` (what the rest of the runtime asks
//! without a `cfg`) and in the builder that installs them, or on a door to one of them (a
//! `mod` or a `pub use`). Anywhere else, the concern would be threaded by hand again.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::fs;
use std::path::Path;

mod common;

/// The rooms, and the place that installs them.
const ROOMS: [&str; 9] = [
    "metrics/",
    "otel.rs",
    "instruments/",
    "pipeline/metered.rs",
    "pipeline/traced.rs",
    "adapter/traced.rs",
    "server/metrics.rs",
    "transport/metrics.rs",
    "server/builder.rs",
];

/// Whether `line` is a `cfg` (or `cfg_attr`) that names the `metrics` or `otel` feature.
fn names_a_feature(line: &str) -> bool {
    let line = line.trim_start();
    (line.starts_with("#[cfg(") || line.starts_with("#[cfg_attr("))
        && (line.contains("feature = \"metrics\"") || line.contains("feature = \"otel\""))
}

/// The attribute that starts on line `at`, on one line (rustfmt spreads a long one over
/// several).
fn attribute_at(lines: &[&str], at: usize) -> String {
    let first = lines[at].trim();
    if !first.starts_with("#[") {
        return first.to_owned();
    }
    let mut attribute = String::new();
    for line in &lines[at..] {
        attribute.push_str(line.trim());
        if line.trim_end().ends_with(']') {
            break;
        }
    }
    attribute
}

/// Whether the item a `cfg` on line `at` guards is a door: a module or a re-export.
fn guards_a_door(lines: &[&str], at: usize) -> bool {
    let mut inside = false;
    lines[at..]
        .iter()
        .map(|line| line.trim_start())
        .find(|line| {
            // Past the attributes (each over one line or several) and doc comments.
            if inside {
                inside = !line.trim_end().ends_with(']');
                return false;
            }
            if line.starts_with("#[") {
                inside = !line.trim_end().ends_with(']');
                return false;
            }
            !line.starts_with("///")
        })
        .is_some_and(|item| {
            let item = item
                .strip_prefix("pub(crate) ")
                .or_else(|| item.strip_prefix("pub "))
                .unwrap_or(item);
            item.starts_with("mod ") || item.starts_with("use ")
        })
}

/// Every place outside the rooms where a `cfg` names the features, as `file:line`.
fn strays(root: &Path, rooms: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, path) in common::named_rust_files(root) {
        if rooms.iter().any(|room| file.starts_with(room)) {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for at in 0..lines.len() {
            let attribute = attribute_at(&lines, at);
            if names_a_feature(&attribute) && !guards_a_door(&lines, at) {
                out.push(format!("{file}:{}: {}", at + 1, attribute));
            }
        }
    }
    out
}

#[test]
fn metrics_and_traces_stay_in_their_rooms() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = strays(&runtime.join("src"), &ROOMS);
    found.extend(strays(&runtime.join("../src"), &[]));
    found.extend(strays(&runtime.join("../bridge/src"), &[]));
    assert!(
        found.is_empty(),
        "a cfg of `metrics` or `otel` outside their rooms (ask `Instruments` instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_stray_and_passes_a_door() {
    let lines = [
        "#[cfg(feature = \"metrics\")]",
        "pub mod metrics;",
        "#[cfg(feature = \"otel\")]",
        "let span = crate::otel::store(name);",
    ];
    assert!(names_a_feature(lines[0]) && guards_a_door(&lines, 0));
    assert!(names_a_feature(lines[2]) && !guards_a_door(&lines, 2));
    assert!(!names_a_feature("#[cfg(feature = \"aql\")]"));
    // An attribute rustfmt spread over lines is read whole.
    let spread = [
        "#[cfg_attr(",
        "    not(feature = \"metrics\"),",
        "    allow(dead_code, reason = \"counted\")",
        ")]",
        "pub(crate) fn open_and_cap(&self) {}",
    ];
    assert!(names_a_feature(&attribute_at(&spread, 0)));
    assert!(!guards_a_door(&spread, 0));
}
