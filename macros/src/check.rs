//! Rules across keys and the signature, checked after parsing.

use proc_macro2::Span;
use syn::ItemFn;

use crate::attr::{AbilityArgs, Errors};
use crate::sig::Signature;

/// The longest ability name accepted.
const MAX_NAME: usize = 128;

pub(crate) fn check(args: &AbilityArgs, sig: &Signature, item: &ItemFn, errors: &mut Errors) {
    if !args.semantic_written {
        errors.push(syn::Error::new(
            Span::call_site(),
            "missing `semantic`: write `#[ability(semantic = \"READ\")]` (or CREATE, UPDATE, DELETE, EXECUTE)",
        ));
    }
    check_flatten(args, sig, item, errors);
    if let Some(name) = &args.name {
        check_name(&name.value(), name.span(), errors);
    }
    for lit in [
        &args.title,
        &args.category,
        &args.permission,
        &args.description,
    ]
    .into_iter()
    .flatten()
    {
        if lit.value().trim().is_empty() {
            errors.spanned(lit, "this value cannot be empty");
        }
    }
}

fn check_flatten(args: &AbilityArgs, sig: &Signature, item: &ItemFn, errors: &mut Errors) {
    let Some(flatten) = args.flatten else { return };
    let values: Vec<_> = sig.params.iter().filter(|p| p.kind.is_value()).collect();
    match values.as_slice() {
        [] => errors.push(syn::Error::new(
            flatten,
            format!("`flatten` needs exactly one value parameter, and `{}` has none", item.sig.ident),
        )),
        [_] => {}
        [_, second, ..] => errors.spanned(
            &second.ident,
            format!(
                "`flatten` needs exactly one value parameter, and `{}` has {}; remove `flatten` to take named parameters",
                item.sig.ident,
                values.len()
            ),
        ),
    }
}

/// Ability names are `[A-Za-z0-9_.-]` with at most one `/` between a namespace and a name.
fn check_name(name: &str, span: Span, errors: &mut Errors) {
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    let slashes = name.matches('/').count();
    if name.is_empty()
        || name.len() > MAX_NAME
        || !valid_chars
        || slashes > 1
        || name.starts_with('/')
        || name.ends_with('/')
    {
        errors.push(syn::Error::new(
            span,
            format!(
                "invalid ability name \"{name}\": use up to {MAX_NAME} of `A-Z a-z 0-9 _ - .`, optionally as `namespace/name`"
            ),
        ));
    }
}
