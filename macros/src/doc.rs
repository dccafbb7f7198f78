//! The description defaults to the function's `///` comment.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Expr, Lit, Meta};

/// The doc comment as an expression of type `&'static str`, or `None` when there is none.
///
/// Literal lines are trimmed and joined here; a computed line (`#[doc = include_str!(..)]`)
/// makes the whole comment a `concat!`.
pub(crate) fn description(attrs: &[Attribute]) -> Option<TokenStream> {
    let exprs: Vec<&Expr> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => Some(&nv.value),
            _ => None,
        })
        .collect();
    if exprs.is_empty() {
        return None;
    }
    let literal: Option<Vec<String>> = exprs
        .iter()
        .map(|e| match e {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) => Some(s.value()),
            _ => None,
        })
        .collect();
    match literal {
        Some(lines) => {
            let text = lines
                .iter()
                .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
                .collect::<Vec<_>>()
                .join("\n");
            let text = text.trim();
            (!text.is_empty()).then(|| quote!(#text))
        }
        None => Some(quote!(::core::concat!(#(#exprs, "\n"),*))),
    }
}
