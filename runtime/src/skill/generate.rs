//! Skills written from the abilities themselves: one per category given to
//! [`ServerBuilder::category_skills`](crate::ServerBuilder::category_skills), whose `SKILL.md`
//! says, for each public tool ability of the category, what it is for, its semantic and
//! danger, its parameters and result in prose, and its confirmation, task and permission
//! behaviour. The text depends only on the abilities, in name order: the same registry always
//! gives the same bytes, so the digest is stable.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{SKILL_MD, Skill, SkillError, check_name};
use crate::{Ability, Registry, TaskSupport};

/// The skill name of a category: lower-cased, every run of other characters than `a-z 0-9`
/// made one `-`, trimmed of `-`.
pub(crate) fn skill_name(category: &str) -> String {
    let mut name = String::with_capacity(category.len());
    for c in category.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    name.trim_matches('-').to_owned()
}

/// The skills of `categories` (name -> description) in `registry`; a category with no public
/// tool ability has none.
pub(crate) fn generated(
    categories: &BTreeMap<String, String>,
    registry: &Registry,
) -> Result<Vec<Skill>, SkillError> {
    let mut skills = Vec::new();
    for (category, description) in categories {
        let mut abilities: Vec<&Ability> = registry
            .iter()
            .filter(|a| a.is_tool() && a.is_public() && a.category() == Some(category.as_str()))
            .collect();
        if abilities.is_empty() {
            continue;
        }
        abilities.sort_by(|a, b| a.name().cmp(b.name()));
        let name = skill_name(category);
        check_name(&name)?;
        let text = write(&name, category, description, &abilities);
        skills.push(Skill::new(name, [(SKILL_MD, text.into_bytes())])?);
    }
    Ok(skills)
}

/// A YAML scalar: a JSON string, which YAML 1.1 and 1.2 read alike.
fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn write(name: &str, category: &str, description: &str, abilities: &[&Ability]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "---");
    let _ = writeln!(out, "name: {name}");
    let _ = writeln!(out, "description: {}", quoted(description));
    let _ = writeln!(out, "---");
    let _ = writeln!(out, "# {category}\n");
    let _ = writeln!(out, "{}\n", description.trim());
    let _ = writeln!(
        out,
        "This skill is written from the server's abilities in the `{category}` category: what \
         each is for, what it takes and returns, and how it behaves. Call them as tools, by the \
         tool name given.\n"
    );
    for ability in abilities {
        ability_section(&mut out, ability);
    }
    out
}

fn ability_section(out: &mut String, ability: &Ability) {
    let _ = writeln!(out, "## `{}`\n", ability.tool_name());
    let doc = ability.description().trim();
    if !doc.is_empty() {
        let _ = writeln!(out, "{doc}\n");
    }
    let semantic = ability.semantic().as_str();
    let danger = ability.danger();
    let _ = writeln!(
        out,
        "- What it does: {semantic} (danger: {}).",
        danger.as_str()
    );
    if let Some(note) = ability.deprecated() {
        let note = note.trim();
        if note.is_empty() {
            let _ = writeln!(out, "- Deprecated.");
        } else {
            let _ = writeln!(out, "- Deprecated: {note}");
        }
    }
    if let Some(scope) = ability.permission() {
        let _ = writeln!(out, "- Needs the scope `{scope}`.");
    }
    if ability.needs_confirmation() {
        let _ = writeln!(
            out,
            "- Needs confirmation: the user is asked directly where the client can \
             be asked; otherwise the first call answers `CONFIRMATION_REQUIRED` with a \
             single-use token in `details.confirmation_token`: ask the user, then call again \
             with the same arguments and the token as `_confirmation` (over MCP-AQL, \
             `confirmation_token`)."
        );
    }
    match ability.task_support() {
        TaskSupport::Optional => {
            let _ = writeln!(
                out,
                "- May run in the background as a task, for a client that asks for one."
            );
        }
        TaskSupport::Required => {
            let _ = writeln!(out, "- Always runs in the background as a task.");
        }
        _ => {}
    }
    let _ = writeln!(out);
    parameters(out, ability.input_schema());
    result(out, ability);
}

fn parameters(out: &mut String, schema: &Map<String, Value>) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match properties.filter(|p| !p.is_empty()) {
        None => {
            let _ = writeln!(out, "Parameters: none.\n");
        }
        Some(properties) => {
            let _ = writeln!(out, "Parameters:\n");
            for (name, property) in properties {
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let _ = write!(out, "- `{name}` ({}, {need})", kind(property));
                if let Some(text) = property.get("description").and_then(Value::as_str) {
                    let _ = write!(out, ": {}", text.trim());
                }
                if let Some(default) = property.get("default") {
                    let _ = write!(out, " Default: `{default}`.");
                }
                let _ = writeln!(out);
            }
            let _ = writeln!(out);
        }
    }
}

fn result(out: &mut String, ability: &Ability) {
    let Some(wire) = ability.output_schema() else {
        let _ = writeln!(out, "Returns: a result without a declared schema.\n");
        return;
    };
    let own = if ability.output_wrapped() {
        wire.get("properties")
            .and_then(|p| p.get("result"))
            .cloned()
            .unwrap_or(Value::Null)
    } else {
        Value::Object((**wire).clone())
    };
    let fields: Vec<String> = own
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(name, s)| format!("`{name}` ({})", kind(s)))
                .collect()
        })
        .unwrap_or_default();
    if fields.is_empty() {
        let _ = writeln!(out, "Returns: {}.\n", kind(&own));
    } else {
        let _ = writeln!(out, "Returns: an object with {}.\n", fields.join(", "));
    }
}

/// A schema's type in words: `string`, `integer`, `array of object`, `one of "a", "b"`...
fn kind(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let listed: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", listed.join(", "));
    }
    let alternatives = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(alternatives) = alternatives {
        let mut kinds: Vec<String> = alternatives.iter().map(kind).collect();
        kinds.dedup();
        return kinds.join(" or ");
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", kind(items)),
            None => "array".to_owned(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("properties").is_some() => "object".to_owned(),
        _ if schema.get("$ref").is_some() => "object".to_owned(),
        _ => "any value".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::skill_name;

    #[test]
    fn category_names_become_skill_names() {
        assert_eq!(skill_name("todos"), "todos");
        assert_eq!(skill_name("Content Management"), "content-management");
        assert_eq!(skill_name("--a//b--"), "a-b");
    }
}
