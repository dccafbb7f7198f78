//! The output's schema: the returned type's (the `Ok` type's, for a `Result`), or none.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::sig::{Output, Signature};

/// A `Result` behind another name (`type Answer = Result<u8, E>`) is refused at compile time:
/// read as a value, its error would be served as data. `Result` by name is read as written;
/// anything else is asked by its type, through `Returned`.
pub(crate) fn not_a_result(p: &TokenStream, sig: &Signature) -> TokenStream {
    let Output::Plain(ty) = &sig.output else {
        return TokenStream::new();
    };
    let message = format!(
        "`{}` is a `Result`: write its `Result<T, E>` as the return type, so its error is the call's error",
        quote!(#ty).to_string().replace(' ', "")
    );
    quote_spanned! {ty.span()=>
        const _: () = {
            #[allow(unused_imports)]
            use #p::NotResult as _;
            ::core::assert!(!<#p::Returned<#ty>>::IS_RESULT, "{}", #message);
        };
    }
}

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
