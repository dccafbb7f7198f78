//! What the tests that read the runtime's own sources share.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`, in a stable order.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out
}

/// Every `.rs` file below `dir` with its path from `dir` (`/`-separated), in a stable order.
pub(crate) fn named_rust_files(dir: &Path) -> Vec<(String, PathBuf)> {
    rust_files(dir)
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (name, path)
        })
        .collect()
}
