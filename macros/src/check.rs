//! Rules across keys and the signature, checked after parsing.

use abilities_core::{Semantic, TaskSupport};
use proc_macro2::Span;
use syn::ItemFn;

use crate::attr::{AbilityArgs, Errors, SEMANTIC};
use crate::sig::{ParamKind, Signature};

pub(crate) fn check(args: &AbilityArgs, sig: &Signature, item: &ItemFn, errors: &mut Errors) {
    if !args.written.contains(&SEMANTIC) {
        errors.push(syn::Error::new(
            Span::call_site(),
            "missing `semantic`: write `#[ability(semantic = \"READ\")]` (or CREATE, UPDATE, DELETE, EXECUTE)",
        ));
    }
    check_flatten(args, sig, item, errors);
    check_kind(args, sig, errors);
    if let Some(family) = &args.family {
        let value = family.value();
        let valid = value.starts_with(|c: char| c.is_ascii_lowercase())
            && value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && value.len() <= 32;
        if !valid {
            errors.spanned(
                family,
                format!("invalid family \"{value}\": use snake_case (`a-z 0-9 _`, starting with a letter), like \"observe\""),
            );
        } else if args.resource.is_some() || args.prompt.is_some() {
            errors.spanned(
                family,
                "`family` routes a tool: resources and prompts are not MCP-AQL operations",
            );
        }
    }
    if let Some(task) = &args.task
        && task.value != TaskSupport::Forbidden
        && (args.resource.is_some() || args.prompt.is_some())
    {
        errors.spanned(
            task.span,
            "`task` runs a tool in the background: resources and prompts answer in the request",
        );
    }
    if let Some(confirm) = &args.confirm
        && confirm.value
        && (args.resource.is_some() || args.prompt.is_some())
    {
        errors.spanned(
            confirm,
            "`confirm` guards a tool call: resources and prompts are read, never confirmed",
        );
    }
    if let Some(name) = &args.name {
        check_name(&name.value(), name.span(), errors);
    }
    for lit in [
        &args.title,
        &args.category,
        &args.permission,
        &args.description,
        &args.mime_type,
    ]
    .into_iter()
    .flatten()
    {
        if lit.value().trim().is_empty() {
            errors.spanned(lit, "this value cannot be empty");
        }
    }
}

/// `flatten` with no owned parameter at all; how many of several are values only their types
/// can tell, which the generated code asserts.
fn check_flatten(args: &AbilityArgs, sig: &Signature, item: &ItemFn, errors: &mut Errors) {
    let Some(flatten) = args.flatten else { return };
    for param in &sig.params {
        if let crate::sig::ParamKind::Owned(param_args, _) = &param.kind
            && let Some(header) = &param_args.header
        {
            errors.spanned(
                header,
                "`header` mirrors a named parameter in a header; a `flatten` value has no name: remove `flatten` or `header`",
            );
        }
    }
    if !sig.params.iter().any(|p| p.kind.is_owned()) {
        errors.push(syn::Error::new(
            flatten,
            format!(
                "`flatten` needs exactly one value parameter, and `{}` has none",
                item.sig.ident
            ),
        ));
    }
}

/// The ability-name rule the runtime applies to abilities built at run time.
fn check_name(name: &str, span: Span, errors: &mut Errors) {
    if let Err(reason) = abilities_core::check_ability_name(name) {
        errors.push(syn::Error::new(span, reason));
    }
}

/// `resource` and `prompt`: one kind at a time, a resource's parameters all in its URI, and
/// `complete` only where a client can ask for completions.
fn check_kind(args: &AbilityArgs, sig: &Signature, errors: &mut Errors) {
    if let (Some(_), Some(prompt)) = (&args.resource, args.prompt) {
        errors.push(syn::Error::new(
            prompt,
            "an ability is a tool, a resource or a prompt: remove `prompt` or `resource`",
        ));
    }
    if let (Some(mime_type), None) = (&args.mime_type, &args.resource) {
        errors.spanned(
            mime_type,
            "`mime_type` describes a resource: add `resource = \"...\"`",
        );
    }
    let Some(resource) = &args.resource else {
        if args.prompt.is_none() {
            for param in &sig.params {
                if let ParamKind::Owned(param_args, _) = &param.kind
                    && let Some(complete) = &param_args.complete
                {
                    errors.spanned(
                        complete,
                        "`complete` serves completion requests, which only prompts and resource templates receive: add `prompt` or `resource = \"...\"`",
                    );
                }
            }
        }
        return;
    };
    if let Some(flatten) = args.flatten {
        errors.push(syn::Error::new(
            flatten,
            "a resource takes its parameters from its URI template: remove `flatten`",
        ));
    }
    if let Some(semantic) = &args.semantic
        && semantic.value != Semantic::Read
    {
        errors.spanned(
            semantic.span,
            "a resource is read: use `semantic = \"READ\"`",
        );
    }
    let uri = resource.value();
    let variables = match abilities_core::template_variables(&uri) {
        Ok(variables) => variables,
        Err(reason) => {
            errors.spanned(
                resource,
                format!("invalid resource URI \"{uri}\": {reason}"),
            );
            return;
        }
    };
    // Which owned parameters not in the URI are extractors only their types can tell: the
    // generated code asserts it.
    let owned: Vec<_> = sig.params.iter().filter(|p| p.kind.is_owned()).collect();
    for variable in &variables {
        if !owned.iter().any(|p| p.ident == variable) {
            errors.spanned(
                resource,
                format!("the URI template variable `{{{variable}}}` names no parameter: add a parameter `{variable}`"),
            );
        }
    }
}
