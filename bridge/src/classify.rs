//! What an upstream tool does, decided in order: the overlay, the tool's annotations, the verb
//! its name starts with, else EXECUTE; and how dangerous it is: the overlay, else the
//! semantic's default raised by the MCP-AQL draft's name patterns.

use abilities::{Danger, Semantic};
use serde_json::Value;

use crate::config::{ServerOverlay, ToolOverlay};

/// A tool's semantic and danger, each with the reason it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// What the tool does.
    pub semantic: Semantic,
    /// Why: `overlay`, `readOnlyHint`, `verb "get"`...
    pub semantic_why: String,
    /// How much harm it can do.
    pub danger: Danger,
    /// Why: `overlay`, `the READ default`, `name "drop_*"`...
    pub danger_why: String,
}

/// Verbs by the semantic they imply.
const VERBS: [(Semantic, &[&str]); 4] = [
    (
        Semantic::Read,
        &["get", "list", "read", "search", "find", "query", "describe"],
    ),
    (
        Semantic::Create,
        &["create", "add", "new", "insert", "write"],
    ),
    (
        Semantic::Update,
        &["update", "set", "edit", "rename", "move"],
    ),
    (Semantic::Delete, &["delete", "remove", "drop", "clear"]),
];

/// A tool name in snake case: `getUser`, `get-user`, `get.user`, `GET_USER` and `get user` all
/// become `get_user` (a capital after a lower-case letter or a digit starts a word).
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ' | '/') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            if c.is_ascii_uppercase()
                && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                && !out.ends_with('_')
            {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        prev = Some(c);
    }
    out
}

/// Classify one upstream tool from its name, its `annotations` (as the upstream sent them)
/// and the overlay.
pub fn classify(
    name: &str,
    annotations: Option<&Value>,
    server: Option<&ServerOverlay>,
    tool: Option<&ToolOverlay>,
) -> Classification {
    let hint = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    let snake = snake(name);
    let verb = snake.split('_').next().unwrap_or("").to_owned();
    let (semantic, semantic_why) = if let Some(semantic) = tool.and_then(|t| t.semantic) {
        (semantic, "overlay".to_owned())
    } else if hint("readOnlyHint") == Some(true) {
        (Semantic::Read, "readOnlyHint".to_owned())
    } else if hint("destructiveHint") == Some(true) {
        (Semantic::Delete, "destructiveHint".to_owned())
    } else if hint("idempotentHint") == Some(true) {
        (Semantic::Update, "idempotentHint".to_owned())
    } else if let Some((semantic, _)) = VERBS
        .iter()
        .find(|(_, verbs)| verbs.contains(&verb.as_str()))
    {
        (*semantic, format!("verb \"{verb}\""))
    } else if let Some(semantic) = server.and_then(|s| s.semantic) {
        (semantic, "server overlay".to_owned())
    } else {
        (Semantic::Execute, "default".to_owned())
    };
    let (danger, danger_why) = if let Some(danger) = tool.and_then(|t| t.danger) {
        (danger, "overlay".to_owned())
    } else if let Some(danger) = server.and_then(|s| s.danger) {
        (danger, "server overlay".to_owned())
    } else {
        let base = Danger::for_semantic(semantic);
        match Danger::from_name(&snake) {
            Some((named, pattern)) if named > base => (named, format!("name \"{pattern}\"")),
            _ => (base, format!("the {semantic} default")),
        }
    };
    Classification {
        semantic,
        semantic_why,
        danger,
        danger_why,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn of(name: &str, annotations: Value) -> (Semantic, String, Danger, String) {
        let annotations = (!annotations.is_null()).then_some(annotations);
        let c = classify(name, annotations.as_ref(), None, None);
        (c.semantic, c.semantic_why, c.danger, c.danger_why)
    }

    #[test]
    fn annotations_come_before_the_name() {
        use Semantic::*;
        let rows = [
            (
                "delete_x",
                json!({"readOnlyHint": true}),
                Read,
                "readOnlyHint",
            ),
            (
                "get_x",
                json!({"destructiveHint": true}),
                Delete,
                "destructiveHint",
            ),
            (
                "run",
                json!({"readOnlyHint": false, "idempotentHint": true}),
                Update,
                "idempotentHint",
            ),
            // Hints that are false say nothing: the name decides.
            (
                "create_x",
                json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false}),
                Create,
                "verb \"create\"",
            ),
        ];
        for (name, annotations, semantic, why) in rows {
            let (s, w, _, _) = of(name, annotations);
            assert_eq!((s, w.as_str()), (semantic, why), "{name}");
        }
    }

    #[test]
    fn every_verb_in_every_spelling() {
        let table = [
            ("get", Semantic::Read),
            ("list", Semantic::Read),
            ("read", Semantic::Read),
            ("search", Semantic::Read),
            ("find", Semantic::Read),
            ("query", Semantic::Read),
            ("describe", Semantic::Read),
            ("create", Semantic::Create),
            ("add", Semantic::Create),
            ("new", Semantic::Create),
            ("insert", Semantic::Create),
            ("write", Semantic::Create),
            ("update", Semantic::Update),
            ("set", Semantic::Update),
            ("edit", Semantic::Update),
            ("rename", Semantic::Update),
            ("move", Semantic::Update),
            ("delete", Semantic::Delete),
            ("remove", Semantic::Delete),
            ("drop", Semantic::Delete),
            ("clear", Semantic::Delete),
        ];
        for (verb, semantic) in table {
            let camel = format!("{verb}Things");
            for name in [
                format!("{verb}_things"),
                format!("{verb}-things"),
                camel,
                verb.to_owned(),
            ] {
                let (s, why, _, _) = of(&name, Value::Null);
                assert_eq!(s, semantic, "{name}");
                assert_eq!(why, format!("verb \"{verb}\""), "{name}");
            }
        }
        for name in ["GET_USER", "Get.User", "get user"] {
            assert_eq!(of(name, Value::Null).0, Semantic::Read, "{name}");
        }
        // A verb inside the name is not the name's verb.
        assert_eq!(
            of("directory_tree", Value::Null).0,
            Semantic::Execute,
            "no verb"
        );
        assert_eq!(of("budget_list", Value::Null).1, "default");
        assert_eq!(of("settle", Value::Null).0, Semantic::Execute);
    }

    #[test]
    fn danger_follows_the_semantic_raised_by_name_patterns() {
        assert_eq!(of("get_x", Value::Null).2, Danger::Safe);
        assert_eq!(of("create_x", Value::Null).2, Danger::Reversible);
        assert_eq!(of("remove_x", Value::Null).2, Danger::Destructive);
        assert_eq!(of("convert", Value::Null).2, Danger::Reversible);
        let (s, _, d, why) = of("drop_table", Value::Null);
        assert_eq!(
            (s, d, why.as_str()),
            (Semantic::Delete, Danger::Forbidden, "name \"drop_*\"")
        );
        let (_, _, d, why) = of("delete_all_rows", Value::Null);
        assert_eq!(
            (d, why.as_str()),
            (Danger::Forbidden, "name \"delete_all*\"")
        );
        let (_, _, d, why) = of("purge-cache", Value::Null);
        assert_eq!((d, why.as_str()), (Danger::Dangerous, "name \"purge_*\""));
        for name in ["dropTable", "drop.table", "WIPE_DISK", "wipeDisk"] {
            assert_eq!(of(name, Value::Null).2, Danger::Forbidden, "{name}");
        }
        // A read-only hint does not lower what the name says.
        let (s, _, d, _) = of("wipe_disk", json!({"readOnlyHint": true}));
        assert_eq!((s, d), (Semantic::Read, Danger::Forbidden));
    }

    #[test]
    fn the_overlay_wins() {
        let tool = ToolOverlay {
            semantic: Some(Semantic::Update),
            danger: Some(Danger::Destructive),
            ..ToolOverlay::default()
        };
        let c = classify(
            "get_x",
            Some(&json!({"readOnlyHint": true})),
            None,
            Some(&tool),
        );
        assert_eq!(
            (
                c.semantic,
                c.semantic_why.as_str(),
                c.danger,
                c.danger_why.as_str()
            ),
            (Semantic::Update, "overlay", Danger::Destructive, "overlay")
        );
        let server = ServerOverlay {
            semantic: Some(Semantic::Read),
            danger: Some(Danger::Dangerous),
            ..ServerOverlay::default()
        };
        // The server's semantic is the fallback before EXECUTE; its danger applies to all.
        let c = classify("convert", None, Some(&server), None);
        assert_eq!((c.semantic, c.danger), (Semantic::Read, Danger::Dangerous));
        let c = classify("delete_x", None, Some(&server), None);
        assert_eq!(c.semantic, Semantic::Delete);
    }
}
