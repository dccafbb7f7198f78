//! The output's schema: the returned type's (the `Ok` type's, for a `Result`), or none.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::sig::{Output, Signature};

/// `fn() -> Option<Schema>` for the definition's `output`.
pub(crate) fn output_schema(p: &TokenStream, sig: &Signature) -> TokenStream {
    match &sig.output {
        Output::Plain(ty) | Output::Result { ok: Some(ty), .. } => {
            let schema = quote_spanned!(ty.span()=> <#ty as #p::AbilityOutput>::output_schema);
            quote!(#schema as fn() -> ::core::option::Option<#p::schemars::Schema>)
        }
        Output::Unit | Output::Result { ok: None, .. } => {
            quote!(#p::no_output_schema as fn() -> ::core::option::Option<#p::schemars::Schema>)
        }
    }
}
