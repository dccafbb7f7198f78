//! The official JSON Schema Test Suite (draft 2020-12) on the built-in validator: no case
//! answered wrong, and no more refused than counted here. Run by `tests/interop/run.sh`, which
//! unpacks the suite (pinned) and names its `tests/draft2020-12` in `JSON_SCHEMA_TEST_SUITE`:
//! `cargo test -p abilities-runtime --lib official_suite -- --ignored`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::keyword::Compiled;
use super::schema::Problem;

/// Required cases the built-in validator refuses today (references to other documents,
/// `$dynamicRef`, embedded resources, other dialects): the count may fall, never rise.
const MAX_REFUSED_REQUIRED: usize = 120;
/// The same for the optional cases (formats left out: `format` is an annotation here).
const MAX_REFUSED_OPTIONAL: usize = 49;

#[derive(Default)]
struct Tally {
    right: usize,
    wrong: Vec<String>,
    refused: usize,
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "format") {
                files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn run(path: &Path, tally: &mut Tally) {
    let text = std::fs::read_to_string(path).expect("suite file");
    let groups: Value = serde_json::from_str(&text).expect("suite JSON");
    for group in groups.as_array().expect("groups") {
        let cases = group["tests"].as_array().expect("tests");
        let compiled = match Compiled::new(&group["schema"]) {
            Ok(compiled) => compiled,
            Err(Problem::Unsupported(_)) => {
                tally.refused += cases.len();
                continue;
            }
            // Every schema of the suite is well formed: calling one malformed is wrong.
            Err(Problem::Invalid(why)) => {
                tally.wrong.push(format!(
                    "{}: {}: refused as malformed: {why}",
                    path.display(),
                    group["description"]
                ));
                continue;
            }
        };
        for case in cases {
            let expected = case["valid"].as_bool().expect("valid");
            let valid = compiled.is_valid(&case["data"]);
            // The report agrees with the yes or no.
            let reported = compiled.failures(&case["data"]).is_empty();
            if valid == expected && reported == expected {
                tally.right += 1;
            } else {
                tally.wrong.push(format!(
                    "{}: {} / {}: expected {expected}, got {valid} (report: {reported})",
                    path.display(),
                    group["description"],
                    case["description"]
                ));
            }
        }
    }
}

#[test]
#[ignore = "needs the official suite: tests/interop/run.sh runs it"]
fn official_suite() {
    let root = PathBuf::from(std::env::var("JSON_SCHEMA_TEST_SUITE").expect(
        "JSON_SCHEMA_TEST_SUITE names the suite's tests/draft2020-12 directory \
         (tests/interop/run.sh unpacks it)",
    ));
    let mut required = Vec::new();
    let mut optional = Vec::new();
    files(&root, &mut required);
    required.retain(|p| !p.starts_with(root.join("optional")));
    files(&root.join("optional"), &mut optional);
    assert!(
        required.len() > 40,
        "too few suite files in {}",
        root.display()
    );
    let (mut req, mut opt) = (Tally::default(), Tally::default());
    required.iter().for_each(|p| run(p, &mut req));
    optional.iter().for_each(|p| run(p, &mut opt));
    for (name, tally) in [("required", &req), ("optional", &opt)] {
        println!(
            "JSON Schema Test Suite 2020-12, {name}: {} right, {} wrong, {} refused",
            tally.right,
            tally.wrong.len(),
            tally.refused
        );
        for wrong in &tally.wrong {
            println!("  wrong: {wrong}");
        }
    }
    assert!(
        req.wrong.is_empty() && opt.wrong.is_empty(),
        "wrong answers"
    );
    assert!(
        req.refused <= MAX_REFUSED_REQUIRED,
        "{} refused",
        req.refused
    );
    assert!(
        opt.refused <= MAX_REFUSED_OPTIONAL,
        "{} refused",
        opt.refused
    );
}
