//! The configuration: the `mcpServers` JSON that Claude Desktop, Cursor and VS Code use, and
//! the overlay that says how to serve each server's tools.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use abilities::{Danger, Semantic};
use serde::Deserialize;

/// Everything the bridge serves.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// The upstream servers by name, in name order.
    pub servers: BTreeMap<String, Upstream>,
    /// How to serve them, by server name.
    pub overlay: BTreeMap<String, ServerOverlay>,
}

/// How to reach one upstream server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the bridge's environment.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the bridge's).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (`Authorization`...).
        headers: BTreeMap<String, String>,
    },
}

/// One upstream server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// Its name in the configuration: the namespace of its abilities.
    pub name: String,
    /// How to reach it.
    pub launch: Launch,
}

/// How one server's tools are served: defaults for all of them, and per-tool settings.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerOverlay {
    /// The semantic of every tool that has none of its own.
    #[serde(default, with = "semantic_opt")]
    pub semantic: Option<Semantic>,
    /// The MCP-AQL endpoint family of its tools.
    pub family: Option<String>,
    /// The danger of every tool that has none of its own.
    #[serde(default, with = "danger_opt")]
    pub danger: Option<Danger>,
    /// The scope a caller needs for any of its tools.
    pub permission: Option<String>,
    /// Serve none of it.
    #[serde(default)]
    pub hide: bool,
    /// Per tool, by the upstream's tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverlay>,
}

/// How one tool is served.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolOverlay {
    /// Its semantic, whatever its annotations and name say.
    #[serde(default, with = "semantic_opt")]
    pub semantic: Option<Semantic>,
    /// Its MCP-AQL endpoint family.
    pub family: Option<String>,
    /// Its danger, whatever its semantic and name say.
    #[serde(default, with = "danger_opt")]
    pub danger: Option<Danger>,
    /// The scope a caller needs.
    pub permission: Option<String>,
    /// Do not serve it.
    #[serde(default)]
    pub hide: bool,
    /// The name it is served under, after `<server>/`.
    pub rename: Option<String>,
    /// The description served instead of the upstream's.
    pub description: Option<String>,
}

/// A configuration that cannot be served, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {error}", path = .0.display(), error = .1)]
    Read(PathBuf, std::io::Error),
    /// The file is not the JSON expected.
    #[error("{path}: {error}", path = .0.display(), error = .1)]
    Parse(PathBuf, String),
    /// A server entry is neither a command nor a URL, or names an unknown tool setting.
    #[error("server \"{0}\": {1}")]
    Server(String, String),
}

/// A server entry as the file spells it. Keys other clients use (`disabled`, `autoApprove`...)
/// are ignored, except `disabled: true`, which the bridge honours too.
#[derive(Deserialize)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    disabled: bool,
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(rename = "mcpServers", alias = "servers", default)]
    servers: BTreeMap<String, RawServer>,
    #[serde(default)]
    overlay: BTreeMap<String, ServerOverlay>,
}

impl Config {
    /// Read a configuration file: `{"mcpServers": {...}, "overlay": {...}}` (VS Code's
    /// `servers` is read as `mcpServers`).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::Read(path.to_owned(), e))?;
        Self::parse(&text).map_err(|e| match e {
            ConfigError::Parse(_, reason) => ConfigError::Parse(path.to_owned(), reason),
            other => other,
        })
    }

    /// Parse a configuration's JSON.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = serde_json::from_str(text)
            .map_err(|e| ConfigError::Parse(PathBuf::from("config"), e.to_string()))?;
        let mut servers = BTreeMap::new();
        for (name, server) in raw.servers {
            if server.disabled {
                continue;
            }
            let launch = launch(&name, server)?;
            servers.insert(name.clone(), Upstream { name, launch });
        }
        let mut namespaces = BTreeMap::new();
        for (name, upstream) in &servers {
            if let Launch::Http { headers: h, .. } = &upstream.launch {
                headers(name, h)?;
            }
            if let Some(other) = namespaces.insert(sanitize(name), name) {
                return Err(ConfigError::Server(
                    name.clone(),
                    format!(
                        "its abilities would share a namespace with server \"{other}\": rename one"
                    ),
                ));
            }
        }
        let mut config = Self {
            servers,
            overlay: BTreeMap::new(),
        };
        config.merge_overlay(raw.overlay)?;
        Ok(config)
    }

    /// Add an overlay file's settings (`{"<server>": {...}}`, or a whole configuration's
    /// `overlay`), replacing what the configuration said for the same servers.
    pub fn load_overlay(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::Read(path.to_owned(), e))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| ConfigError::Parse(path.to_owned(), e.to_string()))?;
        let value = match value.get("overlay") {
            Some(inner) => inner.clone(),
            None => value,
        };
        let overlay = serde_json::from_value(value)
            .map_err(|e| ConfigError::Parse(path.to_owned(), e.to_string()))?;
        self.merge_overlay(overlay)
    }

    fn merge_overlay(
        &mut self,
        overlay: BTreeMap<String, ServerOverlay>,
    ) -> Result<(), ConfigError> {
        for name in overlay.keys() {
            if !self.servers.contains_key(name) {
                return Err(ConfigError::Server(
                    name.clone(),
                    "the overlay names a server the configuration does not have".into(),
                ));
            }
        }
        self.overlay.extend(overlay);
        Ok(())
    }
}

fn launch(name: &str, server: RawServer) -> Result<Launch, ConfigError> {
    let problem = |reason: &str| ConfigError::Server(name.to_owned(), reason.to_owned());
    match (server.command, server.url, server.kind.as_deref()) {
        (_, _, Some("sse")) => Err(problem(
            "the SSE transport (protocol 2024-11-05) is not supported: use the server's Streamable HTTP endpoint",
        )),
        (Some(_), Some(_), _) => Err(problem("give either `command` or `url`, not both")),
        (Some(command), None, _) => Ok(Launch::Stdio {
            command,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
        }),
        (None, Some(url), _) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(problem("`url` must be an http:// or https:// URL"));
            }
            if url.starts_with("https://") && !cfg!(feature = "tls") {
                return Err(problem(
                    "https:// needs TLS: install abilities-bridge with `--features tls`",
                ));
            }
            Ok(Launch::Http {
                url,
                headers: server.headers,
            })
        }
        (None, None, _) => Err(problem("needs `command` (a program to run) or `url`")),
    }
}

/// The headers of an HTTP upstream, checked.
pub(crate) fn headers(
    name: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, ConfigError> {
    headers
        .iter()
        .map(|(k, v)| {
            let key = http::HeaderName::try_from(k.as_str());
            let value = http::HeaderValue::try_from(v.as_str());
            match (key, value) {
                (Ok(key), Ok(value)) => Ok((key, value)),
                _ => Err(ConfigError::Server(
                    name.to_owned(),
                    format!("header \"{k}\" is not a valid HTTP header"),
                )),
            }
        })
        .collect()
}

/// `"READ"`, `"read"`... as a [`Semantic`].
pub(crate) fn parse_semantic(text: &str) -> Option<Semantic> {
    Semantic::ALL
        .into_iter()
        .find(|s| s.as_str().eq_ignore_ascii_case(text))
}

/// `"safe"`... as a [`Danger`].
pub(crate) fn parse_danger(text: &str) -> Option<Danger> {
    Danger::ALL
        .into_iter()
        .find(|d| d.as_str().eq_ignore_ascii_case(text))
}

mod semantic_opt {
    use abilities::Semantic;
    use serde::{Deserialize, Deserializer, de::Error};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Semantic>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_semantic(&text).map(Some).ok_or_else(|| {
            D::Error::custom(format!(
                "unknown semantic \"{text}\": expected CREATE, READ, UPDATE, DELETE or EXECUTE"
            ))
        })
    }
}

mod danger_opt {
    use abilities::Danger;
    use serde::{Deserialize, Deserializer, de::Error};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Danger>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_danger(&text).map(Some).ok_or_else(|| {
            D::Error::custom(format!(
                "unknown danger \"{text}\": expected safe, reversible, destructive, dangerous or forbidden"
            ))
        })
    }
}

/// An ability-name part from an upstream's name: characters outside `A-Za-z0-9_.-` become
/// `_`, at most 60 characters.
pub(crate) fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_commands_urls_and_the_overlay() {
        let config = Config::parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "autoApprove": []},
                "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}},
                "off": {"command": "nothing", "disabled": true}
            },
            "overlay": {"fs": {"danger": "dangerous", "tools": {"move_file": {"semantic": "update", "rename": "mv"}}}}}"#,
        )
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        assert!(
            matches!(&config.servers["fs"].launch, Launch::Stdio { command, args, .. } if command == "npx" && args.len() == 2)
        );
        assert!(
            matches!(&config.servers["web"].launch, Launch::Http { headers, .. } if headers["Authorization"] == "Bearer t")
        );
        let fs = &config.overlay["fs"];
        assert_eq!(fs.danger, Some(Danger::Dangerous));
        assert_eq!(fs.tools["move_file"].semantic, Some(Semantic::Update));
        assert_eq!(fs.tools["move_file"].rename.as_deref(), Some("mv"));
    }

    #[test]
    fn refuses_what_it_cannot_serve() {
        let err = |text: &str| Config::parse(text).unwrap_err().to_string();
        assert!(err(r#"{"mcpServers": {"x": {}}}"#).contains("server \"x\": needs `command`"));
        assert!(
            err(r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#).contains("SSE")
        );
        assert!(err(r#"{"mcpServers": {"x": {"url": "ftp://h"}}}"#).contains("http://"));
        if !cfg!(feature = "tls") {
            assert!(
                err(r#"{"mcpServers": {"x": {"url": "https://h/mcp"}}}"#)
                    .contains("--features tls")
            );
        }
        assert!(
            err(r#"{"mcpServers": {"a b": {"command": "c"}, "a_b": {"command": "c"}}}"#)
                .contains("share a namespace")
        );
        assert!(
            err(
                r#"{"mcpServers": {"x": {"url": "http://h/mcp", "headers": {"bad header": "v"}}}}"#
            )
            .contains("header \"bad header\"")
        );
        assert!(
            err(r#"{"mcpServers": {"x": {"command": "c"}}, "overlay": {"y": {}}}"#)
                .contains("server \"y\": the overlay names a server")
        );
        assert!(
            err(r#"{"mcpServers": {"x": {"command": "c"}}, "overlay": {"x": {"semantic": "FETCH"}}}"#)
                .contains("unknown semantic \"FETCH\"")
        );
        assert!(
            err(r#"{"mcpServers": {"x": {"command": "c"}}, "overlay": {"x": {"tools": {"t": {"hidden": true}}}}}"#)
                .contains("unknown field `hidden`")
        );
    }
}
