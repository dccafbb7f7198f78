//! Where the annotated function sits. An attribute macro is told nothing about its item's
//! surroundings, and one inside an `impl` or `trait` block cannot register it (it has no free
//! path); so the source file is read to tell the user so instead of leaving them the generated
//! code's errors. When the file does not settle it, the answer is "free" and the compiler's
//! own errors stand.
//!
//! The file is read at every expansion and parsed again only when its text changed: a
//! long-lived macro server (rust-analyzer's) sees each edit, never a stale parse.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use syn::{Block, ImplItem, Item, Stmt, TraitItem};

/// What each file read holds: its text's lines, and every `fn` item in source order (name,
/// associated or not).
struct Source {
    lines: Vec<String>,
    fns: Vec<(String, bool)>,
}

/// Each file's parse, by path, with a hash of the text it was made from.
type Parsed = HashMap<PathBuf, (u64, Option<Arc<Source>>)>;

static SOURCES: LazyLock<Mutex<Parsed>> = LazyLock::new(Mutex::default);

/// The parse of the file at `path` as it is now: the one kept when its text is the same, else
/// a new one. `None` when the file cannot be read or parsed.
fn source(path: &Path) -> Option<Arc<Source>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let digest = hasher.finish();
    let mut sources = SOURCES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((kept, source)) = sources.get(path)
        && *kept == digest
    {
        return source.clone();
    }
    // A file that does not parse is remembered too, until its text changes.
    let source = syn::parse_file(&text).ok().map(|parsed| {
        let mut fns = Vec::new();
        items(&parsed.items, &mut fns);
        Arc::new(Source {
            lines: text.lines().map(str::to_owned).collect(),
            fns,
        })
    });
    sources.insert(path.to_owned(), (digest, source.clone()));
    source
}

/// Whether the function named `ident` is an associated function (in an `impl` or `trait`
/// block).
pub(crate) fn is_associated(ident: &syn::Ident) -> bool {
    if !proc_macro::is_available() {
        return false;
    }
    let span = ident.span().unwrap();
    let Some(file) = span.local_file() else {
        return false;
    };
    let line = span.line();
    let name = ident.to_string();
    let Some(source) = source(&file) else {
        return false;
    };
    // The lines that declare `fn <name>`, matched one to one with the parsed functions of
    // that name; any mismatch (a macro-made fn, one in a comment) and nothing is claimed.
    let declared: Vec<usize> = source
        .lines
        .iter()
        .enumerate()
        .filter(|(_, text)| !text.trim_start().starts_with("//") && declares(text, &name))
        .map(|(i, _)| i + 1)
        .collect();
    let parsed: Vec<bool> = source
        .fns
        .iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, associated)| *associated)
        .collect();
    declared.len() == parsed.len()
        && declared
            .iter()
            .zip(parsed)
            .any(|(at, associated)| *at == line && associated)
}

/// Whether a line has `fn <name>` followed by something other than an identifier character.
fn declares(line: &str, name: &str) -> bool {
    let is_ident = |c: char| c == '_' || c.is_alphanumeric();
    let mut rest = line;
    while let Some(at) = rest.find("fn") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + 2..];
        let trimmed = after.trim_start();
        if before.is_none_or(|c| !is_ident(c))
            && trimmed.len() < after.len()
            && let Some(tail) = trimmed.strip_prefix(name)
            && tail.chars().next().is_none_or(|c| !is_ident(c))
        {
            return true;
        }
        rest = after;
    }
    false
}

fn items(items: &[Item], fns: &mut Vec<(String, bool)>) {
    for item in items {
        match item {
            Item::Fn(f) => {
                fns.push((f.sig.ident.to_string(), false));
                block(&f.block, fns);
            }
            Item::Impl(imp) => {
                for item in &imp.items {
                    if let ImplItem::Fn(f) = item {
                        fns.push((f.sig.ident.to_string(), true));
                        block(&f.block, fns);
                    }
                }
            }
            Item::Trait(tr) => {
                for item in &tr.items {
                    if let TraitItem::Fn(f) = item {
                        fns.push((f.sig.ident.to_string(), true));
                        if let Some(body) = &f.default {
                            block(body, fns);
                        }
                    }
                }
            }
            Item::Mod(module) => {
                if let Some((_, inner)) = &module.content {
                    self::items(inner, fns);
                }
            }
            _ => {}
        }
    }
}

fn block(body: &Block, fns: &mut Vec<(String, bool)>) {
    for stmt in &body.stmts {
        if let Stmt::Item(item) = stmt {
            items(std::slice::from_ref(item), fns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{declares, source};

    /// A file edited between two expansions is parsed again: the second sees the edit.
    #[test]
    fn an_edited_file_is_read_anew() {
        let dir = std::env::temp_dir().join(format!("abilities-place-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let path = dir.join("lib.rs");
        std::fs::write(&path, "struct S;\nimpl S {\n    fn count() {}\n}\n").expect("written");
        let before = source(&path).expect("parsed");
        assert_eq!(before.fns, vec![("count".to_owned(), true)]);
        // The same text: the same parse.
        assert!(std::sync::Arc::ptr_eq(
            &before,
            &source(&path).expect("parsed")
        ));
        std::fs::write(&path, "fn count() {}\n").expect("written");
        let after = source(&path).expect("parsed");
        assert_eq!(after.fns, vec![("count".to_owned(), false)]);
        assert_eq!(after.lines, vec!["fn count() {}".to_owned()]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_declaration_is_fn_then_the_name() {
        assert!(declares("    fn count(status: String) -> usize {", "count"));
        assert!(declares("pub async fn count<T>()", "count"));
        assert!(!declares("    fn counted() {", "count"));
        assert!(!declares("    let f = count;", "count"));
        assert!(!declares("    defn count()", "count"));
        assert!(!declares("    fncount()", "count"));
    }
}
