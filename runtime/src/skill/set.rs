//! The skills a server serves: what it was given ([`Skills`]) and, per registry snapshot,
//! the set with every file and directory indexed by URI ([`SkillSet`]), answering
//! `skills/list`, `skills/get`, `resources/read` and `resources/directory/read`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    GetSkillResult, ListResourcesResult, ListSkillsResult, ReadResourceResult, Resource,
    ResourceContents, SkillFrontmatter, SkillResource, SkillResources,
};

use super::{SKILL_MD, Skill, SkillError, generated};
use crate::Registry;

/// How many skills one `skills/list` page holds; an entry is never split across pages.
const PAGE: usize = 50;
/// How many entries one `resources/directory/read` page holds.
const DIRECTORY_PAGE: usize = 500;
/// The MIME type of a directory.
const DIRECTORY: &str = "inode/directory";

/// What the server was given: hand-written skills, the categories whose skills are written
/// from their abilities (with each category's description), and skills set while it runs,
/// by group ([`ServedSkills::set`](crate::ServedSkills::set): a bridge's upstream, say).
#[derive(Clone, Default)]
pub(crate) struct Skills {
    pub(crate) written: Arc<Vec<Skill>>,
    pub(crate) categories: Arc<BTreeMap<String, String>>,
    pub(crate) groups: Arc<BTreeMap<String, Vec<Skill>>>,
}

/// One directory: its children, each a file or a directory.
#[derive(Default)]
struct Directory {
    children: BTreeMap<String, Option<(usize, usize)>>,
}

/// The skills of one snapshot, indexed.
#[derive(Default)]
pub(crate) struct SkillSet {
    skills: Vec<Skill>,
    /// `skill://...` of every file -> (skill, file).
    files: HashMap<String, (usize, usize)>,
    /// `skill://...` of every directory (a skill's root and its sub-directories).
    directories: HashMap<String, Directory>,
    /// `SKILL.md` of each skill -> the skill.
    manifests: HashMap<String, usize>,
}

impl SkillSet {
    /// The set of `skills`'s written skills and those of its categories in `registry`.
    pub(crate) fn new(skills: &Skills, registry: &Registry) -> Result<Self, SkillError> {
        let mut all: Vec<Skill> = skills.written.iter().cloned().collect();
        all.extend(skills.groups.values().flatten().cloned());
        all.extend(generated(&skills.categories, registry)?);
        all.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(pair) = all.windows(2).find(|p| p[0].path == p[1].path) {
            return Err(SkillError::Duplicate {
                path: pair[0].path.clone(),
            });
        }
        let mut set = Self::default();
        for (s, skill) in all.iter().enumerate() {
            let root = format!("skill://{}", skill.path);
            set.manifests.insert(skill.uri(), s);
            set.directories.entry(root.clone()).or_default();
            for (f, file) in skill.files.iter().enumerate() {
                let uri = format!("{root}/{}", encode(&file.path));
                set.files.insert(uri, (s, f));
                // Every directory on the way, each listing its child.
                let mut parent = root.clone();
                let segments: Vec<&str> = file.path.split('/').collect();
                for (depth, segment) in segments.iter().enumerate() {
                    let last = depth + 1 == segments.len();
                    let child = format!("{parent}/{}", encode(segment));
                    set.directories
                        .entry(parent.clone())
                        .or_default()
                        .children
                        .entry(child.clone())
                        .or_insert(if last { Some((s, f)) } else { None });
                    if !last {
                        set.directories.entry(child.clone()).or_default();
                    }
                    parent = child;
                }
            }
        }
        set.skills = all;
        Ok(set)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Each skill's `SKILL.md` URI and description, in URI order.
    #[cfg_attr(
        not(feature = "aql"),
        allow(dead_code, reason = "MCP-AQL's introspection mentions them")
    )]
    pub(crate) fn summaries(&self) -> impl Iterator<Item = (String, &str)> {
        self.skills
            .iter()
            .map(|s| (s.uri(), s.description.as_str()))
    }

    /// A skill's `skills/list` entry: its URI, frontmatter and every file.
    fn entry(&self, skill: &Skill) -> rmcp::model::Skill {
        let mut frontmatter =
            SkillFrontmatter::new(skill.name.as_str(), skill.description.as_str());
        for (key, value) in &skill.frontmatter {
            if key != "name" && key != "description" {
                frontmatter = frontmatter.with_field(key.as_str(), value.clone());
            }
        }
        let root = format!("skill://{}", skill.path);
        let resources = skill
            .files
            .iter()
            .map(|f| {
                SkillResource::new(
                    format!("{root}/{}", encode(&f.path)),
                    f.digest.clone(),
                    f.bytes.len() as u64,
                )
            })
            .collect();
        rmcp::model::Skill::new(skill.uri(), frontmatter, SkillResources::Files(resources))
    }

    /// `skills/list`: a page of whole entries from `cursor`.
    pub(crate) fn list(&self, cursor: Option<&str>) -> Result<ListSkillsResult, ErrorData> {
        let start = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(cursor)
                .filter(|&at| at <= self.skills.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params("the cursor is not one this server issued", None)
                })?,
        };
        let end = (start + PAGE).min(self.skills.len());
        let mut result = ListSkillsResult::with_all_items(
            self.skills[start..end]
                .iter()
                .map(|s| self.entry(s))
                .collect(),
        );
        if end < self.skills.len() {
            result.next_cursor = Some(encode_cursor(end));
        }
        Ok(result)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`; -32602 otherwise.
    pub(crate) fn get(&self, uri: &str) -> Result<GetSkillResult, ErrorData> {
        match self.manifests.get(uri) {
            Some(&s) => Ok(GetSkillResult::new(self.entry(&self.skills[s]))),
            None => Err(ErrorData::invalid_params(
                format!("'{}' is not a skill this server serves", shown(uri)),
                None,
            )),
        }
    }

    /// Whether `uri` is one of the skills' files.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        self.files.contains_key(uri)
    }

    /// `resources/read` of a skill file: text when it is UTF-8 text, else base64.
    pub(crate) fn read(&self, uri: &str) -> Option<ReadResourceResult> {
        let &(s, f) = self.files.get(uri)?;
        let file = &self.skills[s].files[f];
        let mime = file.mime_type();
        let textual = mime.is_none_or(|m| {
            m.starts_with("text/")
                || m.ends_with("json")
                || m.ends_with("yaml")
                || m.ends_with("toml")
        });
        let contents = match std::str::from_utf8(&file.bytes) {
            Ok(text) if textual && !text.contains('\0') => ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.unwrap_or("text/plain").to_owned()),
                text: text.to_owned(),
                meta: None,
            },
            _ => ResourceContents::BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime.unwrap_or("application/octet-stream").to_owned()),
                blob: base64::engine::general_purpose::STANDARD.encode(&file.bytes),
                meta: None,
            },
        };
        Some(ReadResourceResult::new(vec![contents]))
    }

    /// `resources/directory/read`: the direct children of a skill directory, a page from
    /// `cursor`; -32602 for anything that is not one.
    pub(crate) fn directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let Some(directory) = self.directories.get(uri) else {
            let what = if self.files.contains_key(uri) {
                "is a file, not a directory"
            } else {
                "is not a skill directory this server serves"
            };
            return Err(ErrorData::invalid_params(
                format!("'{}' {what}", shown(uri)),
                None,
            ));
        };
        let start = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(cursor)
                .filter(|&at| at <= directory.children.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params("the cursor is not one this server issued", None)
                })?,
        };
        let resources: Vec<Resource> = directory
            .children
            .iter()
            .skip(start)
            .take(DIRECTORY_PAGE)
            .map(|(child, file)| {
                let name = child.rsplit('/').next().unwrap_or(child).to_owned();
                match file {
                    None => Resource::new(child.as_str(), name).with_mime_type(DIRECTORY),
                    Some((s, f)) => {
                        let file = &self.skills[*s].files[*f];
                        let resource =
                            Resource::new(child.as_str(), name).with_size(file.bytes.len() as u64);
                        match file.mime_type() {
                            Some(mime) => resource.with_mime_type(mime),
                            None => resource,
                        }
                    }
                }
            })
            .collect();
        let end = start + resources.len();
        let mut result = ListResourcesResult::with_all_items(resources);
        if end < directory.children.len() {
            result.next_cursor = Some(encode_cursor(end));
        }
        Ok(result)
    }

    /// Each skill's `SKILL.md` as a resource of `resources/list`: named and described by its
    /// frontmatter, with its size, sorted by URI.
    pub(crate) fn resources(&self) -> Vec<(String, Resource)> {
        self.skills
            .iter()
            .map(|skill| {
                let size = skill
                    .files
                    .iter()
                    .find(|f| f.path == SKILL_MD)
                    .map_or(0, |f| f.bytes.len() as u64);
                let uri = skill.uri();
                let resource = Resource::new(uri.as_str(), skill.name.as_str())
                    .with_description(skill.description.as_str())
                    .with_mime_type("text/markdown")
                    .with_size(size);
                (uri, resource)
            })
            .collect()
    }
}

/// A file path as URI path segments: unreserved characters kept, the rest percent-encoded.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn shown(uri: &str) -> String {
    uri.chars().take(200).collect()
}

fn encode_cursor(position: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("s:{position}"))
}

fn decode_cursor(text: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("s:")?
        .parse()
        .ok()
}
