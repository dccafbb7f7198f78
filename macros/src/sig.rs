//! Analyse the function signature: which parameters are values and which are extractors,
//! what it returns, and everything the registry cannot hold.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::attr::{Errors, ParamArgs, parse_param_attr};

/// The name of the attribute on parameters, stripped by the macro.
pub(crate) const PARAM_ATTR: &str = "param";

pub(crate) struct Signature {
    pub(crate) is_async: bool,
    pub(crate) params: Vec<Param>,
    pub(crate) output: Output,
}

pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) kind: ParamKind,
}

pub(crate) enum ParamKind {
    /// `&T`: borrowed from the call context (`&Context`), through `FromContextRef`.
    Borrowed,
    /// Any other type: a value from the arguments or an extractor from the context. Which one
    /// is the type's `Param` impl's business, never its name's; what only the type can tell
    /// is checked by `const` assertions in the generated code.
    Owned(Box<ParamArgs>, Option<Span>),
}

impl ParamKind {
    /// Whether the parameter can be a value (it is not borrowed).
    pub(crate) fn is_owned(&self) -> bool {
        matches!(self, Self::Owned(..))
    }
}

pub(crate) enum Output {
    /// No return type, or `()`.
    Unit,
    /// `T`.
    Plain(Type),
    /// `Result<T, E>` (or an alias named `Result`); `ok` is `None` for `Result<(), E>`.
    /// `err_span` points at `E`, or at the whole type for an alias without it.
    Result { ok: Option<Type>, err_span: Span },
}

/// Analyse `item`, removing the `#[param]` attributes from it.
pub(crate) fn analyse(item: &mut ItemFn, errors: &mut Errors) -> Signature {
    let sig = &mut item.sig;
    if let Some(constness) = &sig.constness {
        errors.spanned(constness, "`#[ability]` cannot be used on a `const fn`");
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.spanned(
            unsafety,
            "`#[ability]` cannot be used on an `unsafe fn`: clients could call it with any input",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, "`#[ability]` cannot be used on an `extern fn`");
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(
            variadic,
            "`#[ability]` cannot be used on a variadic function",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics.params,
            "an ability cannot be generic: the registry needs one concrete function; use concrete types",
        );
    } else if let Some(clause) = &sig.generics.where_clause {
        errors.spanned(clause, "an ability cannot have a `where` clause");
    }

    let mut params = Vec::new();
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.spanned(
                receiver.self_token,
                "`#[ability]` goes on free functions, not methods: `self` cannot be an ability parameter; move the function out of the `impl` block and take the data `self` would hold as `State<T>` (give the server `.state(..)`)",
            ),
            FnArg::Typed(arg) => {
                let mut param_args = ParamArgs::default();
                let mut param_attr_span: Option<Span> = None;
                arg.attrs.retain(|attr| {
                    if attr.path().is_ident(PARAM_ATTR) {
                        param_attr_span.get_or_insert(attr.span());
                        parse_param_attr(attr, &mut param_args, errors);
                        false
                    } else {
                        true
                    }
                });
                let ident = match &*arg.pat {
                    Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
                    other => {
                        errors.spanned(other, pattern_message(other));
                        continue;
                    }
                };
                if ident.to_string().starts_with("__ability_") {
                    errors.spanned(
                        &ident,
                        "parameter names starting with `__ability_` are reserved for the code `#[ability]` generates: rename it",
                    );
                }
                let ty = (*arg.ty).clone();
                let kind = if check_type(&ty, errors) {
                    ParamKind::Borrowed
                } else {
                    ParamKind::Owned(Box::new(param_args), param_attr_span)
                };
                if let (ParamKind::Borrowed, Some(span)) = (&kind, param_attr_span) {
                    errors.spanned(span, "`#[param]` describes value parameters; a borrowed parameter comes from the context and has no schema");
                }
                params.push(Param { ident, ty, kind });
            }
        }
    }

    let output = match &sig.output {
        ReturnType::Default => Output::Unit,
        ReturnType::Type(_, ty) => output_of(ty, errors),
    };
    Signature {
        is_async: sig.asyncness.is_some(),
        params,
        output,
    }
}

/// Reject what no parameter can be; `true` for a borrowed (`&T`) parameter.
fn check_type(ty: &Type, errors: &mut Errors) -> bool {
    match ty {
        Type::Reference(reference) => {
            if let Some(mutability) = &reference.mutability {
                errors.spanned(
                    mutability,
                    "parameters cannot be borrowed mutably: take the context as `&Context`",
                );
            }
            true
        }
        Type::ImplTrait(impl_trait) => {
            errors.spanned(
                impl_trait.impl_token,
                "an ability parameter cannot be `impl Trait`: use a concrete type",
            );
            false
        }
        _ => false,
    }
}

fn output_of(ty: &Type, errors: &mut Errors) -> Output {
    if is_unit(ty) {
        return Output::Unit;
    }
    if let Type::ImplTrait(impl_trait) = ty {
        errors.spanned(
            impl_trait.impl_token,
            "an ability must return a concrete type, not `impl Trait`",
        );
        return Output::Unit;
    }
    if let Type::Path(path) = ty
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(GenericArgument::Type(ok)) = args.args.first()
    {
        let err_span = args
            .args
            .iter()
            .nth(1)
            .map_or_else(|| ty.span(), Spanned::span);
        let ok = (!is_unit(ok)).then(|| ok.clone());
        return Output::Result { ok, err_span };
    }
    Output::Plain(ty.clone())
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}

/// Why a pattern cannot be an ability parameter, in the words its kind calls for: axum's
/// `State(x): State<T>` habit is named as such.
fn pattern_message(pat: &Pat) -> String {
    if let Pat::TupleStruct(pat) = pat
        && let (Some(last), 1) = (pat.path.segments.last(), pat.elems.len())
        && let Pat::Ident(inner) = &pat.elems[0]
    {
        let (wrapper, name) = (last.ident.to_string(), inner.ident.to_string());
        return format!(
            "ability parameters are names, not patterns: write `{name}: {wrapper}<..>` instead of \
             `{wrapper}({name}): {wrapper}<..>` (axum's habit); an ability's `State<T>` \
             dereferences to the `T` it holds"
        );
    }
    "ability parameters must be plain identifiers: each one names a property of the input"
        .to_owned()
}
