//! Skills (the `io.modelcontextprotocol/skills` extension, SEP-2640): a `SKILL.md` with YAML
//! frontmatter (`name`, `description`) and the files beside it, served beside the abilities as
//! `skill://<path>/...` resources and listed by `skills/list`.
//!
//! A [`Skill`] is a value: made from files ([`Skill::new`]), read from a directory at start
//! ([`Skill::from_dir`]), or written from the abilities of a category
//! ([`ServerBuilder::category_skills`](crate::ServerBuilder::category_skills)). Each file's
//! digest (`sha256:...`) and size are computed once, when the skill is made.

mod generate;
mod set;

pub(crate) use generate::generated;
pub(crate) use set::{SkillSet, Skills};

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

/// The file every skill has, at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The most files and bytes one skill should hold (the extension's limits).
const MAX_FILES: usize = 512;
const MAX_BYTES: usize = 16 * 1024 * 1024;

/// Why a skill cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The skill has no `SKILL.md` at its root.
    #[error("skill '{path}' has no SKILL.md at its root")]
    MissingSkillMd {
        /// The skill's path.
        path: String,
    },
    /// `SKILL.md` does not start with a YAML frontmatter block, or the block is not YAML.
    #[error("the SKILL.md of skill '{path}' {reason}")]
    Frontmatter {
        /// The skill's path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A name (the frontmatter's, or a path segment) breaks the naming rules.
    #[error(
        "skill name '{name}' {reason}: 1 to 64 lowercase letters, digits and single hyphens, not at either end"
    )]
    BadName {
        /// The name.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The frontmatter's `name` is not the last segment of the skill's path.
    #[error(
        "skill '{path}' is named '{name}' in its frontmatter: the name must equal the path's last segment"
    )]
    NameMismatch {
        /// The skill's path.
        path: String,
        /// The frontmatter's name.
        name: String,
    },
    /// A file path is empty, absolute, has empty, `.` or `..` segments, or is there twice.
    #[error("skill '{path}' has an invalid file path '{file}': {reason}")]
    BadFile {
        /// The skill's path.
        path: String,
        /// The file path.
        file: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The skill is over the extension's limits (512 files, 16 MiB).
    #[error(
        "skill '{path}' is too large: {files} files, {bytes} bytes (at most 512 files and 16 MiB)"
    )]
    TooLarge {
        /// The skill's path.
        path: String,
        /// Its files.
        files: usize,
        /// Its bytes.
        bytes: usize,
    },
    /// Two skills have one path.
    #[error("two skills have the path '{path}'")]
    Duplicate {
        /// The path.
        path: String,
    },
    /// A directory could not be read.
    #[error("cannot read skill directory {dir}: {error}")]
    Io {
        /// The directory or file.
        dir: String,
        /// The error.
        error: std::io::Error,
    },
}

/// One file of a skill: its path inside the skill, its bytes, digest and MIME type.
#[derive(Clone, Debug)]
pub struct SkillFile {
    path: String,
    bytes: Arc<[u8]>,
    digest: String,
}

impl SkillFile {
    /// The path inside the skill (`SKILL.md`, `reference/style.md`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The bytes served.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `sha256:` and the lowercase hex SHA-256 of the bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The MIME type by extension (`text/markdown` for `.md`), if known.
    pub fn mime_type(&self) -> Option<&'static str> {
        mime_type(&self.path)
    }
}

/// The MIME type of a file by its extension.
pub(crate) fn mime_type(path: &str) -> Option<&'static str> {
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "py" => "text/x-python",
        "sh" => "application/x-sh",
        "js" | "mjs" => "text/javascript",
        "rs" => "text/x-rust",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// A skill: where it is served (`skill://<path>/SKILL.md`), its frontmatter and its files.
///
/// ```
/// use abilities::skill::Skill;
///
/// let skill = Skill::new(
///     "publishing",
///     [(
///         "SKILL.md",
///         b"---\nname: publishing\ndescription: How to publish a post.\n---\n# Publishing\n".to_vec(),
///     )],
/// )
/// .unwrap();
/// assert_eq!(skill.uri(), "skill://publishing/SKILL.md");
/// assert_eq!(skill.description(), "How to publish a post.");
/// assert!(skill.files()[0].digest().starts_with("sha256:"));
/// ```
#[derive(Clone, Debug)]
pub struct Skill {
    path: String,
    frontmatter: Map<String, Value>,
    name: String,
    description: String,
    files: Vec<SkillFile>,
}

impl Skill {
    /// A skill at `path` (one or more `/`-separated segments, the last its name) with
    /// `files` (paths inside the skill, `SKILL.md` among them). Fails when `SKILL.md` is
    /// missing, its frontmatter has no `name` or `description` or is not YAML, the name breaks
    /// the naming rules or is not the path's last segment, a file path is invalid, or the
    /// skill is over 512 files or 16 MiB.
    pub fn new<P, B>(
        path: impl Into<String>,
        files: impl IntoIterator<Item = (P, B)>,
    ) -> Result<Self, SkillError>
    where
        P: Into<String>,
        B: Into<Vec<u8>>,
    {
        let path = path.into();
        check_path(&path)?;
        let mut made: Vec<SkillFile> = Vec::new();
        for (file, bytes) in files {
            let file: String = file.into();
            check_file(&path, &file)?;
            if made.iter().any(|f| f.path == file) {
                return Err(SkillError::BadFile {
                    path,
                    file,
                    reason: "it is there twice",
                });
            }
            let bytes: Arc<[u8]> = Arc::from(bytes.into());
            made.push(SkillFile {
                digest: rmcp::model::sha256_digest(&bytes),
                path: file,
                bytes,
            });
        }
        made.sort_by(|a, b| a.path.cmp(&b.path));
        let total: usize = made.iter().map(|f| f.bytes.len()).sum();
        if made.len() > MAX_FILES || total > MAX_BYTES {
            return Err(SkillError::TooLarge {
                path,
                files: made.len(),
                bytes: total,
            });
        }
        let Some(manifest) = made.iter().find(|f| f.path == SKILL_MD) else {
            return Err(SkillError::MissingSkillMd { path });
        };
        let frontmatter = frontmatter(&path, &manifest.bytes)?;
        let text = |key: &str| -> Result<String, SkillError> {
            match frontmatter.get(key) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                _ => Err(SkillError::Frontmatter {
                    path: path.clone(),
                    reason: format!("has no '{key}' (a non-empty string) in its frontmatter"),
                }),
            }
        };
        let (name, description) = (text("name")?, text("description")?);
        check_name(&name)?;
        if path.rsplit('/').next() != Some(name.as_str()) {
            return Err(SkillError::NameMismatch { path, name });
        }
        Ok(Self {
            path,
            frontmatter,
            name,
            description,
            files: made,
        })
    }

    /// A skill `skills!` embedded: its files with the digests computed at compile time.
    #[doc(hidden)]
    pub fn __embedded(
        path: &str,
        files: &[(&str, &'static [u8], &str)],
    ) -> Result<Self, SkillError> {
        check_path(path)?;
        let mut skill = Self {
            path: path.to_owned(),
            frontmatter: Map::new(),
            name: String::new(),
            description: String::new(),
            files: Vec::new(),
        };
        skill.files = files
            .iter()
            .map(|(file, bytes, digest)| SkillFile {
                path: (*file).to_owned(),
                bytes: Arc::from(*bytes),
                digest: (*digest).to_owned(),
            })
            .collect();
        skill.files.sort_by(|a, b| a.path.cmp(&b.path));
        let manifest = skill
            .files
            .iter()
            .find(|f| f.path == SKILL_MD)
            .ok_or_else(|| SkillError::MissingSkillMd {
                path: path.to_owned(),
            })?;
        skill.frontmatter = frontmatter(path, &manifest.bytes)?;
        let text = |key: &str| match skill.frontmatter.get(key) {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        };
        skill.name = text("name");
        skill.description = text("description");
        Ok(skill)
    }

    /// The skill in directory `dir`, served at `path`: every file below it (hidden files and
    /// directories left out), read now.
    pub fn from_dir(path: impl Into<String>, dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        read_dir(dir, dir, &mut files)?;
        Self::new(path, files)
    }

    /// Whether `other` is this skill: the same path and files, byte for byte (by digest).
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        self.path == other.path
            && self.files.len() == other.files.len()
            && self
                .files
                .iter()
                .zip(&other.files)
                .all(|(a, b)| a.path == b.path && a.digest == b.digest)
    }

    /// Where it is served: `skill://<path>/SKILL.md`.
    pub fn uri(&self) -> String {
        format!("skill://{}/{SKILL_MD}", self.path)
    }

    /// Its path (the URI's segments before `SKILL.md`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The frontmatter's `name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The whole frontmatter, as JSON.
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// Its files, by path.
    pub fn files(&self) -> &[SkillFile] {
        &self.files
    }
}

fn read_dir(root: &Path, dir: &Path, files: &mut Vec<(String, Vec<u8>)>) -> Result<(), SkillError> {
    let io = |error: std::io::Error| SkillError::Io {
        dir: dir.display().to_string(),
        error,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(io)?;
        let at = entry.path();
        if kind.is_dir() {
            read_dir(root, &at, files)?;
        } else if kind.is_file() {
            let relative = at
                .strip_prefix(root)
                .map(|p| {
                    p.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or(name);
            files.push((relative, std::fs::read(&at).map_err(io)?));
        }
    }
    Ok(())
}

/// The naming rules of the Agent Skills format: 1 to 64 characters, lowercase ASCII letters,
/// digits and hyphens, no hyphen first, last or twice in a row.
pub(crate) fn check_name(name: &str) -> Result<(), SkillError> {
    let bad = |reason| {
        Err(SkillError::BadName {
            name: name.chars().take(80).collect(),
            reason,
        })
    };
    if name.is_empty() || name.len() > 64 {
        return bad("is empty or longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("has a character other than a-z, 0-9 and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return bad("starts or ends with a hyphen, or has two in a row");
    }
    Ok(())
}

fn check_path(path: &str) -> Result<(), SkillError> {
    if path.is_empty() {
        return Err(SkillError::BadName {
            name: String::new(),
            reason: "is empty or longer than 64 characters",
        });
    }
    for segment in path.split('/') {
        check_name(segment)?;
    }
    Ok(())
}

fn check_file(path: &str, file: &str) -> Result<(), SkillError> {
    let reason = if file.is_empty() || file.starts_with('/') {
        Some("it is empty or absolute")
    } else if file
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        Some("it has an empty, '.' or '..' segment")
    } else if file
        .chars()
        .any(|c| c.is_control() || matches!(c, '?' | '#' | '\\'))
    {
        Some("it has a control character, '?', '#' or '\\'")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(SkillError::BadFile {
            path: path.to_owned(),
            file: file.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// The YAML frontmatter at the start of a `SKILL.md`, as JSON.
pub(crate) fn frontmatter(path: &str, bytes: &[u8]) -> Result<Map<String, Value>, SkillError> {
    let error = |reason: String| SkillError::Frontmatter {
        path: path.to_owned(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| error("is not UTF-8".to_owned()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| error("does not start with a '---' frontmatter line".to_owned()))?;
    let end = rest
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| {
            let after = &rest[i + 4..];
            let line_end = after.find('\n').unwrap_or(after.len());
            after[..line_end].trim().is_empty()
        })
        .ok_or_else(|| error("has no closing '---' line after its frontmatter".to_owned()))?;
    let yaml = rest[..end].trim_end_matches('\r');
    let value: Value = yaml_serde::from_str(yaml)
        .map_err(|e| error(format!("has a frontmatter that is not YAML: {e}")))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(error("has a frontmatter that is not a mapping".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::{Skill, SkillError};

    fn md(front: &str) -> Vec<u8> {
        format!("---\n{front}\n---\nBody.\n").into_bytes()
    }

    #[test]
    fn names_and_frontmatter_are_checked() {
        let ok = Skill::new(
            "acme/pdf-tools",
            [("SKILL.md", md("name: pdf-tools\ndescription: PDFs."))],
        )
        .unwrap();
        assert_eq!(ok.uri(), "skill://acme/pdf-tools/SKILL.md");
        for (path, front) in [
            ("Bad", "name: Bad\ndescription: x"),
            ("a--b", "name: a--b\ndescription: x"),
            ("-a", "name: -a\ndescription: x"),
            ("pdf", "name: other\ndescription: x"),
            ("pdf", "description: x"),
            ("pdf", "name: pdf\ndescription: ''"),
            ("pdf", "name: [pdf"),
        ] {
            let made = Skill::new(path, [("SKILL.md", md(front))]);
            assert!(made.is_err(), "{path} {front}");
        }
        assert!(matches!(
            Skill::new("pdf", [("README.md", md("name: pdf\ndescription: x"))]),
            Err(SkillError::MissingSkillMd { .. })
        ));
        assert!(matches!(
            Skill::new(
                "pdf",
                [
                    ("SKILL.md", md("name: pdf\ndescription: x")),
                    ("../x", b"x".to_vec())
                ]
            ),
            Err(SkillError::BadFile { .. })
        ));
    }

    #[test]
    fn a_changed_file_changes_its_digest() {
        let one = Skill::new("a", [("SKILL.md", md("name: a\ndescription: x"))]).unwrap();
        let two = Skill::new("a", [("SKILL.md", md("name: a\ndescription: y"))]).unwrap();
        assert_ne!(one.files()[0].digest(), two.files()[0].digest());
        assert_eq!(one.files()[0].digest().len(), "sha256:".len() + 64);
    }
}
