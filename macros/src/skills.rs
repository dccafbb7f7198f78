//! `skills!("dir")`: every skill under a directory (each sub-directory holding a `SKILL.md`),
//! embedded at compile time, checked at compile time (frontmatter, names) with the error on
//! the path literal, and each file's digest computed here.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use sha2::{Digest, Sha256};
use syn::LitStr;

/// One file of a skill: its path inside the skill, where it is, and its digest.
struct File {
    path: String,
    at: PathBuf,
    digest: String,
}

pub(crate) fn skills(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(tokens) => tokens,
        Err(error) => error.to_compile_error(),
    }
}

/// `skills!("dir")`, or `skills!(crate = "path::to::abilities", "dir")` where the crate is
/// known under another name (re-exported by a crate of the user's), as `#[ability(crate =
/// "...")]` takes it.
struct Input {
    krate: syn::Path,
    literal: LitStr,
}

impl syn::parse::Parse for Input {
    fn parse(input: syn::parse::ParseStream<'_>) -> syn::Result<Self> {
        let mut krate = syn::parse_quote!(::abilities);
        if input.peek(syn::Token![crate]) {
            input.parse::<syn::Token![crate]>()?;
            input.parse::<syn::Token![=]>()?;
            krate = if input.peek(LitStr) {
                input.parse::<LitStr>()?.parse()?
            } else {
                input.parse()?
            };
            input.parse::<syn::Token![,]>()?;
        }
        let literal = input.parse()?;
        Ok(Self { krate, literal })
    }
}

fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let Input { krate, literal } = syn::parse2(input)?;
    let fail = |message: String| syn::Error::new(literal.span(), message);
    // Relative to the file the macro is written in, as `include_bytes!` is.
    let base = proc_macro::Span::call_site()
        .local_file()
        .and_then(|file| file.parent().map(Path::to_path_buf))
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
        .ok_or_else(|| fail("cannot tell where the source file is".to_owned()))?;
    let root = base.join(literal.value());
    let mut found = Vec::new();
    find(&root, &root, &mut found).map_err(|e| fail(format!("{}: {e}", root.display())))?;
    if found.is_empty() {
        return Err(fail(format!(
            "no skill under {}: a skill is a directory holding a SKILL.md",
            root.display()
        )));
    }
    let mut made = Vec::new();
    for (path, dir) in found {
        let files = files(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        check(&path, &dir).map_err(|reason| fail(format!("skill '{path}': {reason}")))?;
        let entries = files.iter().map(|f| {
            let (file, at, digest) = (&f.path, f.at.display().to_string(), &f.digest);
            quote! { (#file, ::core::include_bytes!(#at) as &'static [u8], #digest) }
        });
        made.push(quote! {
            #krate::skill::Skill::__embedded(#path, &[#(#entries),*])
        });
    }
    Ok(quote! {
        {
            let made: ::core::result::Result<
                ::std::vec::Vec<#krate::skill::Skill>,
                #krate::skill::SkillError,
            > = (|| ::core::result::Result::Ok(::std::vec![#(#made?),*]))();
            made
        }
    })
}

/// Every directory below `dir` that holds a `SKILL.md`, with its path from `root`.
fn find(root: &Path, dir: &Path, found: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    if dir != root && dir.join("SKILL.md").is_file() {
        let path = dir
            .strip_prefix(root)
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        found.push((path, dir.to_path_buf()));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && entry.file_type()?.is_dir() {
            find(root, &entry.path(), found)?;
        }
    }
    Ok(())
}

/// The files below a skill's directory (hidden ones left out), with their digests.
fn files(dir: &Path) -> std::io::Result<Vec<File>> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<File>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let at = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(root, &at, out)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&at)?;
            let hash = Sha256::digest(&bytes);
            let digest = format!(
                "sha256:{}",
                hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
            let path = at
                .strip_prefix(root)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default();
            let at = std::fs::canonicalize(&at).unwrap_or(at);
            out.push(File { path, at, digest });
        }
    }
    Ok(())
}

/// The rules `Skill::new` checks, at compile time: a frontmatter with `name` and
/// `description`, the name following the naming rules and equal to the path's last segment.
fn check(path: &str, dir: &Path) -> Result<(), String> {
    for segment in path.split('/') {
        name_rules(segment)?;
    }
    let text = std::fs::read_to_string(dir.join("SKILL.md"))
        .map_err(|e| format!("SKILL.md cannot be read as UTF-8: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not start with a '---' frontmatter line")?;
    let end = rest
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| {
            let after = &rest[i + 4..];
            after[..after.find('\n').unwrap_or(after.len())]
                .trim()
                .is_empty()
        })
        .ok_or("SKILL.md has no closing '---' line after its frontmatter")?;
    let front: serde_json::Value = yaml_serde::from_str(rest[..end].trim_end_matches('\r'))
        .map_err(|e| format!("the frontmatter of SKILL.md is not YAML: {e}"))?;
    let text_of = |key: &str| match front.get(key) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err(format!(
            "the frontmatter of SKILL.md has no '{key}' (a non-empty string)"
        )),
    };
    let name = text_of("name")?;
    text_of("description")?;
    name_rules(&name)?;
    if path.rsplit('/').next() != Some(name.as_str()) {
        return Err(format!(
            "its SKILL.md names it '{name}': the name must equal the directory's name"
        ));
    }
    Ok(())
}

fn name_rules(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the name '{name}' breaks the naming rules: 1 to 64 lowercase letters, digits and single hyphens, not at either end"
        ))
    }
}
