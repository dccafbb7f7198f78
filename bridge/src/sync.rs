//! An upstream's lists, read to the end, turned into abilities and kept in step with the
//! bridge's server: new ones added, changed ones replaced, vanished ones removed.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, PoisonError};

use abilities::{Ability, Semantic, handler::Annotations};
use rmcp::model::{PaginatedRequestParams, Prompt, Resource, ResourceTemplate, Tool};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value, json};

use crate::classify::{Classification, classify};
use crate::config::sanitize;
use crate::forward::{Forward, GetPrompt, ReadResource};
use crate::listing::{Listing, Served};
use crate::upstream::Upstream;

/// The most pages the bridge reads of one list: a server that keeps giving cursors past this
/// is refused rather than read forever.
const MAX_PAGES: usize = 1000;

/// Every page of a list.
macro_rules! read_all {
    ($peer:expr, $method:ident, $field:ident) => {{
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let mut pages = 0;
        loop {
            let params = cursor
                .clone()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = $peer
                .$method(params)
                .await
                .map_err(|e: ServiceError| e.to_string())?;
            items.extend(page.$field);
            pages += 1;
            match page.next_cursor {
                Some(next) if pages < MAX_PAGES && seen.insert(next.clone()) => cursor = Some(next),
                Some(_) => {
                    return Err(format!(
                        "{} gave a cursor again or more than {MAX_PAGES} pages",
                        stringify!($method)
                    ));
                }
                None => break,
            }
        }
        items
    }};
}

async fn all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    Ok(read_all!(peer, list_tools, tools))
}

async fn all_resources(peer: &Peer<RoleClient>) -> Result<Vec<Resource>, String> {
    Ok(read_all!(peer, list_resources, resources))
}

async fn all_templates(peer: &Peer<RoleClient>) -> Result<Vec<ResourceTemplate>, String> {
    Ok(read_all!(peer, list_resource_templates, resource_templates))
}

async fn all_prompts(peer: &Peer<RoleClient>) -> Result<Vec<Prompt>, String> {
    Ok(read_all!(peer, list_prompts, prompts))
}

/// What the upstream's lists gave.
#[derive(Default)]
struct Lists {
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
}

/// Read every list the upstream serves, to the end. Without its tools the upstream is not
/// served (`Err`); a list of resources, templates or prompts that fails is reported in
/// `problems` and the rest is served.
async fn lists(
    peer: &Peer<RoleClient>,
    problems: &mut Vec<(String, String)>,
) -> Result<Lists, String> {
    let caps = peer
        .peer_info()
        .map(|info| info.capabilities.clone())
        .unwrap_or_default();
    let mut lists = Lists::default();
    if caps.tools.is_some() {
        lists.tools = all_tools(peer)
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
    }
    let mut optional = |what: &str, result: Result<(), String>| {
        if let Err(error) = result {
            problems.push((what.to_owned(), format!("{what} failed: {error}")));
        }
    };
    if caps.resources.is_some() {
        let result = all_resources(peer).await.map(|r| lists.resources = r);
        optional("resources/list", result);
        let result = all_templates(peer).await.map(|t| lists.templates = t);
        optional("resources/templates/list", result);
    }
    if caps.prompts.is_some() {
        let result = all_prompts(peer).await.map(|p| lists.prompts = p);
        optional("prompts/list", result);
    }
    Ok(lists)
}

/// Read the upstream's lists and bring its abilities in step with them. `Err` (nothing
/// changed) when its tools cannot be listed.
pub(crate) async fn resync(
    upstream: &Arc<Upstream>,
    peer: &Peer<RoleClient>,
) -> Result<(), String> {
    let mut listing = Listing::default();
    let Lists {
        tools,
        resources,
        templates,
        prompts,
    } = lists(peer, &mut listing.skipped).await?;
    let mut wanted: BTreeMap<String, (Value, Ability)> = BTreeMap::new();
    let mut names = HashSet::new();
    let hide_all = upstream.overlay.as_ref().is_some_and(|o| o.hide);
    let mut unique = |base: String| -> String {
        let mut name = base.clone();
        let mut n = 2;
        while !names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    };
    for tool in &tools {
        let overlay = upstream
            .overlay
            .as_ref()
            .and_then(|o| o.tools.get(tool.name.as_ref()));
        if hide_all || overlay.is_some_and(|t| t.hide) {
            listing
                .skipped
                .push((tool.name.to_string(), "hidden by the overlay".into()));
            continue;
        }
        let part = overlay
            .and_then(|t| t.rename.as_deref())
            .unwrap_or(&tool.name);
        let name = unique(format!("{}/{}", upstream.namespace, sanitize(part)));
        let fingerprint = json!({"tool": tool});
        match tool_ability(upstream, &name, tool) {
            Ok((ability, class)) => {
                listing.served.push(Served {
                    ability: name.clone(),
                    upstream: tool.name.to_string(),
                    kind: "tool",
                    class: Some(class),
                });
                wanted.insert(name, (fingerprint, ability));
            }
            Err(why) => listing.skipped.push((tool.name.to_string(), why)),
        }
    }
    if !hide_all {
        for resource in &resources {
            let name = unique(format!(
                "{}/{}",
                upstream.namespace,
                sanitize(&resource.name)
            ));
            let built = resource_ability(upstream, &name, resource);
            add_built(
                &mut listing,
                &mut wanted,
                name,
                "resource",
                &resource.uri,
                json!({"resource": resource}),
                built,
            );
        }
        for template in &templates {
            let name = unique(format!(
                "{}/{}",
                upstream.namespace,
                sanitize(&template.name)
            ));
            let built = template_ability(upstream, &name, template);
            add_built(
                &mut listing,
                &mut wanted,
                name,
                "template",
                &template.uri_template,
                json!({"template": template}),
                built,
            );
        }
        for prompt in &prompts {
            let name = unique(format!("{}/{}", upstream.namespace, sanitize(&prompt.name)));
            let built = prompt_ability(upstream, &name, prompt);
            add_built(
                &mut listing,
                &mut wanted,
                name,
                "prompt",
                &prompt.name,
                json!({"prompt": prompt}),
                built,
            );
        }
    }
    apply(upstream, wanted, &mut listing);
    let skills = if hide_all {
        Vec::new()
    } else {
        upstream_skills(upstream, peer, &mut listing).await
    };
    if let Err(error) = upstream.server.skills().set(&upstream.name, skills) {
        listing
            .skipped
            .push(("skills".to_owned(), format!("not served: {error}")));
    }
    upstream.update(|s| s.listing = listing);
    Ok(())
}

/// The skill namespace of an upstream: its name lower-cased, every run of other characters
/// than `a-z 0-9` made one `-`.
fn skill_namespace(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// The upstream's skills (SEP-2640), each file read and checked against the digest and size
/// it was listed with, served under the upstream's namespace: its `skill://pdf/SKILL.md` is
/// `skill://<namespace>/pdf/SKILL.md` here. A skill that cannot be read whole, or whose
/// files do not match their digests, is listed as not served, with why.
async fn upstream_skills(
    upstream: &Upstream,
    peer: &Peer<RoleClient>,
    listing: &mut Listing,
) -> Vec<abilities::skill::Skill> {
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.supports_skills());
    if !declared {
        return Vec::new();
    }
    let listed = match peer.list_all_skills().await {
        Ok(listed) => listed,
        Err(error) => {
            listing.skipped.push((
                "skills/list".to_owned(),
                format!("skills/list failed: {error}"),
            ));
            return Vec::new();
        }
    };
    let namespace = skill_namespace(&upstream.name);
    let mut skills = Vec::new();
    for entry in listed {
        match upstream_skill(peer, &namespace, &entry).await {
            Ok(skill) => {
                listing.served.push(Served {
                    ability: skill.uri(),
                    upstream: entry.uri.clone(),
                    kind: "skill",
                    class: None,
                });
                skills.push(skill);
            }
            Err(why) => listing.skipped.push((entry.uri.clone(), why)),
        }
    }
    skills
}

async fn upstream_skill(
    peer: &Peer<RoleClient>,
    namespace: &str,
    entry: &rmcp::model::Skill,
) -> Result<abilities::skill::Skill, String> {
    let path = entry
        .uri
        .strip_prefix("skill://")
        .and_then(|rest| rest.strip_suffix("/SKILL.md"))
        .ok_or("not a skill:// URI ending in /SKILL.md")?;
    let rmcp::model::SkillResources::Files(resources) = &entry.resources else {
        return Err("its files are dynamic: not bridged".to_owned());
    };
    let root = format!("skill://{path}/");
    let mut files = Vec::with_capacity(resources.len());
    for resource in resources {
        let file = resource
            .uri
            .strip_prefix(&root)
            .ok_or_else(|| format!("{} is outside the skill", resource.uri))?;
        let read = peer
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                resource.uri.as_str(),
            ))
            .await
            .map_err(|e| format!("reading {} failed: {e}", resource.uri))?;
        let bytes = match read.contents.first() {
            Some(rmcp::model::ResourceContents::TextResourceContents { text, .. }) => {
                text.as_bytes().to_vec()
            }
            Some(rmcp::model::ResourceContents::BlobResourceContents { blob, .. }) => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(blob)
                    .map_err(|e| format!("{} is not base64: {e}", resource.uri))?
            }
            _ => return Err(format!("{} has no text or blob contents", resource.uri)),
        };
        resource
            .verify(&bytes)
            .map_err(|e| format!("{} does not match its manifest: {e}", resource.uri))?;
        files.push((file.to_owned(), bytes));
    }
    abilities::skill::Skill::new(format!("{namespace}/{path}"), files).map_err(|e| e.to_string())
}

#[allow(
    clippy::too_many_arguments,
    reason = "one row of the listing, as it is built"
)]
fn add_built(
    listing: &mut Listing,
    wanted: &mut BTreeMap<String, (Value, Ability)>,
    name: String,
    kind: &'static str,
    upstream: &str,
    fingerprint: Value,
    built: Result<Ability, String>,
) {
    match built {
        Ok(ability) => {
            listing.served.push(Served {
                ability: name.clone(),
                upstream: upstream.to_owned(),
                kind,
                class: None,
            });
            wanted.insert(name, (fingerprint, ability));
        }
        Err(why) => listing.skipped.push((upstream.to_owned(), why)),
    }
}

/// Register what is new or changed, remove what is gone; what a name clash refuses is
/// reported, not served.
fn apply(upstream: &Upstream, wanted: BTreeMap<String, (Value, Ability)>, listing: &mut Listing) {
    let abilities = upstream.server.abilities();
    let mut registered = upstream
        .registered
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let gone: Vec<String> = registered
        .keys()
        .filter(|name| !wanted.contains_key(*name))
        .cloned()
        .collect();
    for name in gone {
        let _ = abilities.remove(&name);
        registered.remove(&name);
    }
    for (name, (fingerprint, ability)) in wanted {
        if registered.get(&name) == Some(&fingerprint) {
            continue;
        }
        if registered.remove(&name).is_some() {
            let _ = abilities.remove(&name);
        }
        match abilities.add(ability) {
            Ok(()) => {
                registered.insert(name, fingerprint);
            }
            Err(error) => {
                tracing::warn!(server = %upstream.name, ability = %name, %error, "not served");
                listing.served.retain(|s| s.ability != name);
                listing.skipped.push((name, error.to_string()));
            }
        }
    }
}

/// The ability that forwards one upstream tool.
fn tool_ability(
    upstream: &Arc<Upstream>,
    name: &str,
    tool: &Tool,
) -> Result<(Ability, Classification), String> {
    let server_overlay = upstream.overlay.as_ref();
    let overlay = server_overlay.and_then(|o| o.tools.get(tool.name.as_ref()));
    let annotations = tool
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok());
    let class = classify(&tool.name, annotations.as_ref(), server_overlay, overlay);
    let hint = |key: &str| {
        annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    // The upstream's hints where it gave them; open-world where it did not say (a bridged
    // tool reaches outside the bridge by definition).
    let hints = Annotations {
        read_only_hint: hint("readOnlyHint"),
        destructive_hint: hint("destructiveHint"),
        idempotent_hint: hint("idempotentHint"),
        open_world_hint: Some(hint("openWorldHint").unwrap_or(true)),
    };
    let description = overlay
        .and_then(|t| t.description.clone())
        .or_else(|| tool.description.as_ref().map(|d| d.to_string()))
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| format!("The tool \"{}\" of {}.", tool.name, upstream.name));
    let mut builder = Ability::builder(name.to_owned(), class.semantic)
        .description(description)
        .site(false)
        .danger(class.danger)
        .annotations(hints)
        .input_schema(Value::Object((*tool.input_schema).clone()))
        .handler_object(Arc::new(Forward::new(upstream, tool.name.to_string())));
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
    if let Some(title) = title {
        builder = builder.title(title);
    }
    if let Some(output) = &tool.output_schema {
        builder = builder.output_schema(Value::Object((**output).clone()));
    }
    let family = overlay
        .and_then(|t| t.family.clone())
        .or_else(|| server_overlay.and_then(|o| o.family.clone()));
    if let Some(family) = family {
        builder = builder.family(family);
    }
    let permission = overlay
        .and_then(|t| t.permission.clone())
        .or_else(|| server_overlay.and_then(|o| o.permission.clone()));
    if let Some(permission) = permission {
        builder = builder.permission(permission);
    }
    let ability = builder.build().map_err(|e| e.to_string())?;
    Ok((ability, class))
}

fn resource_ability(
    upstream: &Arc<Upstream>,
    name: &str,
    resource: &Resource,
) -> Result<Ability, String> {
    let description = resource
        .description
        .clone()
        .unwrap_or_else(|| format!("The resource {} of {}.", resource.uri, upstream.name));
    Ability::builder(name.to_owned(), Semantic::Read)
        .description(description)
        .site(false)
        .resource(
            resource.uri.clone(),
            resource.mime_type.clone().map(Into::into),
        )
        .handler_object(Arc::new(ReadResource::new(
            upstream,
            resource.uri.clone(),
            Vec::new(),
        )))
        .build()
        .map_err(|e| e.to_string())
}

/// The variables of a URI template of simple `{name}` expansions; `Err` for RFC 6570
/// operators, which the bridge does not expand.
fn template_variables(template: &str) -> Result<Vec<String>, String> {
    let mut vars = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let end = rest[start..]
            .find('}')
            .ok_or("an unclosed `{` in the URI template")?;
        let var = &rest[start + 1..start + end];
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "the URI template expression {{{var}}} is not a simple variable"
            ));
        }
        vars.push(var.to_owned());
        rest = &rest[start + end + 1..];
    }
    Ok(vars)
}

fn template_ability(
    upstream: &Arc<Upstream>,
    name: &str,
    template: &ResourceTemplate,
) -> Result<Ability, String> {
    let vars = template_variables(&template.uri_template)?;
    let properties: Map<String, Value> = vars
        .iter()
        .map(|v| (v.clone(), json!({"type": "string"})))
        .collect();
    let description = template.description.clone().unwrap_or_else(|| {
        format!(
            "The resources {} of {}.",
            template.uri_template, upstream.name
        )
    });
    Ability::builder(name.to_owned(), Semantic::Read)
        .description(description)
        .site(false)
        .resource(
            template.uri_template.clone(),
            template.mime_type.clone().map(Into::into),
        )
        .input_schema(json!({"type": "object", "properties": properties, "required": vars}))
        .handler_object(Arc::new(ReadResource::new(
            upstream,
            template.uri_template.clone(),
            vars,
        )))
        .build()
        .map_err(|e| e.to_string())
}

fn prompt_ability(
    upstream: &Arc<Upstream>,
    name: &str,
    prompt: &Prompt,
) -> Result<Ability, String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in prompt.arguments.iter().flatten() {
        let mut schema = json!({"type": "string"});
        if let Some(description) = &arg.description {
            schema["description"] = json!(description);
        }
        properties.insert(arg.name.clone(), schema);
        if arg.required == Some(true) {
            required.push(arg.name.clone());
        }
    }
    let description = prompt
        .description
        .clone()
        .unwrap_or_else(|| format!("The prompt \"{}\" of {}.", prompt.name, upstream.name));
    Ability::builder(name.to_owned(), Semantic::Read)
        .description(description)
        .site(false)
        .prompt()
        .input_schema(json!({"type": "object", "properties": properties, "required": required}))
        .handler_object(Arc::new(GetPrompt::new(upstream, prompt.name.clone())))
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_templates() {
        assert_eq!(sanitize("my server!"), "my_server_");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize(&"x".repeat(99)).len(), 60);
        assert_eq!(template_variables("a://{x}/b/{y_2}").unwrap(), ["x", "y_2"]);
        assert!(
            template_variables("a://{?x,y}")
                .unwrap_err()
                .contains("not a simple variable")
        );
        assert!(template_variables("a://{x").is_err());
    }
}
