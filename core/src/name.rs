//! Ability names and the MCP tool names derived from them.

/// The longest ability name accepted.
pub const MAX_ABILITY_NAME: usize = 128;

/// The longest tool name many LLM providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Ability names are up to [`MAX_ABILITY_NAME`] of `[A-Za-z0-9_.-]`, with at most one `/`
/// between a namespace and a name. On error, the message to show.
pub fn check_ability_name(name: &str) -> Result<(), String> {
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    let slashes = name.matches('/').count();
    if name.is_empty()
        || name.len() > MAX_ABILITY_NAME
        || !valid_chars
        || slashes > 1
        || name.starts_with('/')
        || name.ends_with('/')
    {
        return Err(format!(
            "invalid ability name \"{name}\": use up to {MAX_ABILITY_NAME} of `A-Z a-z 0-9 _ - .`, optionally as `namespace/name`"
        ));
    }
    Ok(())
}

/// The MCP tool name for an ability name: every character outside `[A-Za-z0-9_-]` becomes
/// `-` (so `my-plugin/count-posts` becomes `my-plugin-count-posts`), and a name over 64
/// characters keeps its first 55 and gains `-` and 8 hex digits of a hash of the whole
/// ability name, so it stays unique and is the same on every run and platform.
/// `None` for an empty name.
///
/// ```
/// use abilities_core::tool_name;
///
/// assert_eq!(tool_name("my-plugin/count-posts").as_deref(), Some("my-plugin-count-posts"));
/// let long = tool_name(&"x".repeat(100)).unwrap();
/// assert_eq!(long.len(), 64);
/// ```
pub fn tool_name(ability: &str) -> Option<String> {
    let ability = ability.trim();
    if ability.is_empty() {
        return None;
    }
    let mut name: String = ability
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.len() > MAX_TOOL_NAME {
        name.truncate(MAX_TOOL_NAME - 9);
        name.push('-');
        name.push_str(&format!("{:08x}", fnv1a(ability.as_bytes()) as u32));
    }
    Some(name)
}

/// FNV-1a: a stable hash (std's `DefaultHasher` may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The snake_case operation name of an ability name: lower-cased, every run of characters
/// outside `a-z 0-9` replaced by one `_`, trimmed of `_`; `op_` in front when it would start
/// with a digit. `my-plugin/count-posts` gives `my_plugin_count_posts`.
pub fn operation_name(ability_name: &str) -> String {
    let mut name = String::with_capacity(ability_name.len());
    for c in ability_name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_matches('_');
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("op_{name}")
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_caps() {
        assert_eq!(tool_name("a.b c/é").as_deref(), Some("a-b-c--"));
        assert_eq!(tool_name("  ").as_deref(), None);
        let a = tool_name(&format!("{}a", "n".repeat(80))).unwrap_or_default();
        let b = tool_name(&format!("{}b", "n".repeat(80))).unwrap_or_default();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert_eq!(tool_name(&"n".repeat(64)).map(|s| s.len()), Some(64));
    }

    #[test]
    fn ability_names_have_one_namespace_at_most() {
        assert!(check_ability_name("my-plugin/count-posts").is_ok());
        assert!(check_ability_name("v1.2_x").is_ok());
        for bad in ["", "a/b/c", "/a", "a/", "a b", "é"] {
            assert!(check_ability_name(bad).is_err(), "{bad}");
        }
        assert!(check_ability_name(&"n".repeat(129)).is_err());
    }
}
